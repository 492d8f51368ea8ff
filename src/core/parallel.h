// Host-side data parallelism for the few loops that touch every weight byte at load (prepacking).
#pragma once

#include <cstdint>
#include <functional>

namespace wgi {

// Calls body(begin, end) on disjoint ranges covering [0, count), on up to `max_threads` threads (the host's
// cores at most), each range at least `min_per_thread` long; inline when that leaves one range or the build
// has no threads (the browser build). Returns when every range is done; an exception from any range is
// rethrown (the first one).
void parallel_for_ranges(int64_t count, int64_t min_per_thread,
                         const std::function<void(int64_t, int64_t)>& body, unsigned max_threads = 8);

}  // namespace wgi
