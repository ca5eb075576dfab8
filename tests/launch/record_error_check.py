"""A rank program for the launcher tests: rank 1 raises in a function that
torch's @record decorates, which writes the error to TORCHELASTIC_ERROR_FILE
(the launcher prints it, as torchrun's failure summary does); other ranks
exit 0."""
import os

from torch.distributed.elastic.multiprocessing.errors import record


@record
def main() -> None:
    if os.environ["RANK"] == "1":
        raise ValueError("rank 1 could not read its shard")


if __name__ == "__main__":
    main()
