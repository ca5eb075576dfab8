// NoSync: while the guard lives, backward only accumulates gradients locally
// (gradient accumulation); the next backward after it averages the sum. One
// guard for anything with set_sync(bool) and sync(): DDP's reducer, ZeRO.
#pragma once

namespace paisoar::grad {

template <typename Synced>
class NoSync {
 public:
  explicit NoSync(Synced& synced) : synced_(synced), prev_(synced.sync()) { synced_.set_sync(false); }
  ~NoSync() { synced_.set_sync(prev_); }
  NoSync(const NoSync&) = delete;
  NoSync& operator=(const NoSync&) = delete;

 private:
  Synced& synced_;
  bool prev_;
};

}  // namespace paisoar::grad
