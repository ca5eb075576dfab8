"""The bad-input campaign's quick mode under pytest: one case of every family
(run.py --quick) through the real binary; any crash, hang, wrongly accepted
input or unclear message fails the test, listed with its command and output.
The full campaign is `python tests/campaign/run.py` (see run.py)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import campaign, report_failures, table  # noqa: E402
from verdict import FAILURES  # noqa: E402


def test_quick_campaign_has_no_failure(tmp_path):
    results = campaign(quick=True, jobs=2, workdir=tmp_path, progress=lambda line: None)
    readers = {r["family"].split("/")[0] for r in results}
    assert readers == {"config", "train-idx", "convert-idx", "images", "shards", "checkpoint", "metrics", "zero",
                       "flags"}, f"the quick campaign covers only {sorted(readers)}"
    print(table(results))
    failures = [r for r in results if r["class"] in FAILURES]
    assert not failures, f"{len(failures)} of {len(results)} cases failed:\n{report_failures(results)}"
