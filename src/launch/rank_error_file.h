// The error a failed rank left in its TORCHELASTIC_ERROR_FILE. torch's
// `@record` (torch.distributed.elastic.multiprocessing.errors) writes
// {"message": {"message": "ValueError: ...", "extraInfo": {...}}} there when
// the decorated function raises; a program may also write {"message":
// "text"}. The launcher prints the message next to the rank's exit, as
// torchrun's failure summary does.
#pragma once

#include <optional>
#include <string>

namespace paisoar::launch {

// The message in the JSON `text`: "message"'s string, or the "message" string
// inside it when it is an object. std::nullopt when there is none.
std::optional<std::string> error_file_message(const std::string& text);

// Reads `path` (at most 1 MiB); std::nullopt when it does not exist or holds
// no message.
std::optional<std::string> read_error_file(const std::string& path);

}  // namespace paisoar::launch
