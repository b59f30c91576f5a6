// chiprt: the whole C++ API in one include.
//
// The host side: Worker (worker.h) with CallConfig and RingSizing (call_config.h, ring_sizes.h),
// Node (node.h: several chips, with host tasks, host_task.h),
// RunReport (run_report.h), GraphExport (graph_export.h), CallableBuilder (callable.h); the task
// model shared with orchestration code: Orchestration and Scope (orchestration.h), TaskArgs
// (task_args.h), Tensor (tensor.h), value types (types.h), Status and Error (status.h); the
// version (version.h); and the kernel side (kernel.h). Each header states its own lifetime and
// threading rules; this one only includes them. A kernel object needs nothing but chiprt/kernel.h.
#pragma once

#include "chiprt/call_config.h"
#include "chiprt/callable.h"
#include "chiprt/diagnostics.h"
#include "chiprt/graph_export.h"
#include "chiprt/host_task.h"
#include "chiprt/kernel.h"
#include "chiprt/node.h"
#include "chiprt/orchestration.h"
#include "chiprt/ring_sizes.h"
#include "chiprt/run_report.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/tensor.h"
#include "chiprt/types.h"
#include "chiprt/version.h"
#include "chiprt/worker.h"
