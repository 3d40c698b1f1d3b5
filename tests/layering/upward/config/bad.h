#include "plugin/collector.h"  // config above plugin: must be reported
