#include "exporter/daemon.h"  // http below the daemon: must be reported
#include "exporter/exposition/metrics.h"  // down: fine
