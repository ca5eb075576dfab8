"""`paisoar train` over bad data, through the real binary: a FIFO in an image
folder, an image over the pixel limit, IDX images of the wrong size, labels
out of range, a shard set without classes. Each stops with the file named and
what to do (or, under data.on_error: skip, names the right file), and none
hangs: every run has a timeout."""
import json
import os

from cli_support import printable
from data_files import idx_set, image_folder, png_bytes

TINY = ["--nproc", "1", "--set", "train.max_steps=2", "--set", "train.batch_size=8", "--set", "train.log_every=1",
        "--set", "profiler.memory=false"]


def train(paisoar, tmp_path, *sets, timeout=300):
    args = ["train", *TINY, "--set", f"run_dir={tmp_path / 'run'}"]
    for s in sets:
        args += ["--set", s]
    return paisoar(*args, timeout=timeout)


def failed_naming(result, *words):
    assert result.code != 0, result
    text = result.out + result.err
    assert printable(text), result
    for w in words:
        assert w in text, f"{w!r} not in:\n{result}"


def folder_sets(path):
    return [f"data.format=folder", f"data.path={path}", "model.name=resnet18", "data.image_size=16",
            "model.num_classes=2"]


def test_fifo_in_an_image_folder_is_refused_not_waited_on(paisoar, tmp_path):
    root = image_folder(tmp_path / "images")
    os.mkfifo(root / "a" / "x.jpg")
    r = train(paisoar, tmp_path, *folder_sets(root), timeout=120)
    failed_naming(r, str(root / "a" / "x.jpg"), "a FIFO", "remove it or move it out of the image folder")


def test_image_over_the_pixel_limit_is_refused_before_decoding(paisoar, tmp_path):
    root = image_folder(tmp_path / "images")
    huge = root / "a" / "huge.png"
    huge.write_bytes(png_bytes(20000, 20000))
    assert huge.stat().st_size < 2 << 20  # a small file that would decode to 400 MB
    r = train(paisoar, tmp_path, *folder_sets(root))
    failed_naming(r, str(huge), "20000x20000", "over the limit of 178956970", "data.max_image_pixels")


def test_image_over_the_pixel_limit_is_skipped_under_on_error_skip(paisoar, tmp_path):
    root = image_folder(tmp_path / "images")
    (root / "a" / "huge.png").write_bytes(png_bytes(20000, 20000))
    r = train(paisoar, tmp_path, *folder_sets(root), "data.on_error=skip")
    assert r.code == 0, r


def test_idx_images_of_another_size_name_the_file(paisoar, tmp_path):
    root = idx_set(tmp_path / "idx", height=32, width=24)
    r = train(paisoar, tmp_path, f"data.path={root}")
    failed_naming(r, str(root / "train-images-idx3-ubyte.gz"), "holds 32x24 images", "take 28x28")


def test_labels_out_of_range_name_the_labels_file(paisoar, tmp_path):
    root = idx_set(tmp_path / "idx", label=lambda i: 255 if i == 3 else i % 10)
    r = train(paisoar, tmp_path, f"data.path={root}", "train.max_steps=1")
    failed_naming(r, str(root / "train-labels-idx1-ubyte.gz") + " record 3", "label 255 is outside [0, 10)")


def test_labels_all_out_of_range_under_skip_name_the_labels_file_and_why(paisoar, tmp_path):
    root = idx_set(tmp_path / "idx", label=lambda i: 255)
    r = train(paisoar, tmp_path, f"data.path={root}", "data.on_error=skip", "train.max_steps=1")
    failed_naming(r, "every sample of batch 0", str(root / "train-labels-idx1-ubyte.gz"), "label 255 is outside [0, 10)",
                  "model.num_classes", "the data set looks broken")
    assert "Target 255" not in r.out + r.err, r  # the memory probe leaves bad samples out, as the loader does


def test_a_run_that_skipped_samples_says_how_many_and_which(paisoar, tmp_path):
    root = idx_set(tmp_path / "idx", label=lambda i: 255 if i in (3, 7) else i % 10)
    r = train(paisoar, tmp_path, f"data.path={root}", "data.on_error=skip", "train.max_steps=8")  # the whole epoch
    assert r.code == 0, r
    labels = str(root / "train-labels-idx1-ubyte.gz")
    line = next((l for l in r.out.splitlines() if "samples read were bad and skipped" in l), "")
    assert "2 of 64 samples read were bad and skipped (data.on_error: skip); the first: " in line, r
    assert labels + " record 3" in line and labels + " record 7" in line, r
    assert "more than 1.0%" in r.err and "the data set looks damaged" in r.err, r  # 2 of 64 is over 1%
    record = next(json.loads(l) for l in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
                  if '"skipped_samples"' in l)
    assert record["skipped"] == 2 and record["read"] == 64 and len(record["first"]) == 2, record


def test_resume_after_a_setting_changed_names_it_both_values_and_the_file(paisoar, tmp_path):
    root = idx_set(tmp_path / "idx")
    r = train(paisoar, tmp_path, f"data.path={root}", "train.max_steps=2")
    assert r.code == 0, r
    r = train(paisoar, tmp_path, f"data.path={root}", "train.max_steps=4", "data.train_limit=16")
    assert r.code == 2, r
    for words in ("step-000000000002.safetensors", "settings a resume cannot take", "data.train_limit 0 there, 16 now",
                  "Set them back", "point checkpoint.dir elsewhere"):
        assert words in r.err, f"{words!r} not in:\n{r}"


def test_shard_set_without_classes_is_refused(paisoar, tmp_path):
    root = image_folder(tmp_path / "images")
    shards = tmp_path / "shards"
    r = paisoar("convert", "folder", "--root", root, "--out", shards, "--quiet")
    assert r.code == 0, r
    manifest = json.loads((shards / "dataset.json").read_text())
    manifest["classes"] = []
    (shards / "dataset.json").write_text(json.dumps(manifest))
    r = train(paisoar, tmp_path, "data.format=shards", f"data.path={shards}", "model.name=resnet18",
              "data.image_size=16", "model.num_classes=2")
    failed_naming(r, str(shards / "dataset.json"), '"classes" is empty')
