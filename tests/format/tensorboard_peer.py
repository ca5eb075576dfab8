"""TensorBoard's own reader, for the event-file tests.

  tensorboard_peer.py DIR  -> JSON {tag: [[step, value, wall_time], ...]} of every
                              scalar in DIR's event files, read by tensorboard's
                              EventAccumulator (no size guidance limit).
"""
import json
import sys

from tensorboard.backend.event_processing import event_accumulator


def main():
    acc = event_accumulator.EventAccumulator(sys.argv[1], size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    out = {tag: [[e.step, e.value, e.wall_time] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
