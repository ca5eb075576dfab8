// Test support: the conversation between torch 2.14.1's own TCPStore client
// and server, recorded by capture_tcpstore_transcript.py into
// data/tcpstore_2_14_transcript.txt, as chunks in the order they travelled.
// The store tests compare the launcher's protocol code with it byte for byte.
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace paisoar::launch::testing {

struct TranscriptChunk {
  int connection = 0;      // 1, 2, ... in the order the client opened them
  std::string label;       // the client call that sent or caused it
  bool from_client = true; // C>S; false: S>C
  bool eof = false;        // the sender closed the connection here
  std::string bytes;
};

inline std::string from_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// Throws std::runtime_error naming the file when it cannot be read.
inline std::vector<TranscriptChunk> read_transcript(const std::string& path = TCPSTORE_TRANSCRIPT) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read the TCPStore transcript " + path +
                             "; regenerate it with tests/launch/capture_tcpstore_transcript.py");
  std::vector<TranscriptChunk> chunks;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    TranscriptChunk c;
    std::string direction, data;
    fields >> c.connection >> c.label >> direction >> data;
    c.from_client = direction == "C>S";
    c.eof = data == "EOF";
    if (!c.eof) c.bytes = from_hex(data);
    chunks.push_back(std::move(c));
  }
  return chunks;
}

// Everything one side sent on one connection, concatenated.
inline std::string sent_by(const std::vector<TranscriptChunk>& chunks, int connection,
                           bool client) {
  std::string out;
  for (const TranscriptChunk& c : chunks)
    if (c.connection == connection && c.from_client == client) out += c.bytes;
  return out;
}

}  // namespace paisoar::launch::testing
