// The conv planner's shared header is ops/conv/conv.h (src/ops/conv.cpp and src/ops/conv/); this name stays
// for ConvInteger / QLinearConv (integer_linear.cpp), which reuse its attribute helpers, until that file
// includes ops/conv/conv.h itself.
#pragma once

#include "ops/conv/conv.h"
