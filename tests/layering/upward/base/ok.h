#include "base/sys/result.h"  // same layer: fine
