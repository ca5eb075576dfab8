// Human-readable bytes and seconds for the plan table and error messages.
#pragma once

#include <cstdint>
#include <string>

namespace paisoar::pipeline::detail {

// "512 B", "1.50 KiB", "3.25 MiB", "2.00 GiB".
std::string format_bytes(int64_t bytes);
// "850 us", "12.34 ms", "1.234 s".
std::string format_seconds(double seconds);

}  // namespace paisoar::pipeline::detail
