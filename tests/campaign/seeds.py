"""The valid inputs every family damages, made once per campaign under
<root>/seeds: an IDX set, an image folder of PNGs and JPEGs, its record
shards (`paisoar convert`), a one-rank run with two checkpoints and its
metrics.jsonl, and a two-rank ZeRO-1 run's sharded checkpoints. Each family
copies what it needs into its case directory and damages the copy."""
import io
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from execute import BIN, DATA_LIMIT_KIB, case_env  # first: it puts tests/cli on the path
from data_files import idx_set, png_bytes


def tiny(nproc=1, batch=8):
    """A tiny run: `nproc` ranks, two steps of `batch` samples, no profiler tables."""
    return ["--nproc", str(nproc), *sets("train.max_steps=2", f"train.batch_size={batch}", "train.log_every=1",
                                         "profiler.memory=false", "profiler.enabled=false")]

IMAGE_MODEL = ["--set", "model.name=resnet18", "--set", "data.image_size=8", "--set", "model.num_classes=2"]
IMAGES_PER_CLASS = 4  # two PNGs and two JPEGs; 8 in all, one batch, so every image is decoded


def sets(*pairs):
    out = []
    for p in pairs:
        out += ["--set", p]
    return out


def jpeg_bytes(side, shade, progressive=False):
    pixels = bytes((x * 7 + y * 3 + shade) % 256 for y in range(side) for x in range(side) for _ in range(3))
    buffer = io.BytesIO()
    Image.frombytes("RGB", (side, side), pixels).save(buffer, "JPEG", quality=90, progressive=progressive)
    return buffer.getvalue()


def image_folder(root, side=32):
    """root/a and root/b, each with 000.png, 001.png, 002.jpg, 003.jpg."""
    for c, name in enumerate(("a", "b")):
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(IMAGES_PER_CLASS):
            if i < 2:
                row = bytes((x * 8 + c * 64 + i) % 256 for x in range(side))
                (root / name / f"{i:03d}.png").write_bytes(png_bytes(side, side, row))
            else:
                (root / name / f"{i:03d}.jpg").write_bytes(jpeg_bytes(side, c * 64 + i))
    return root


def paisoar(*args, cwd=None):
    done = subprocess.run(["bash", "-c", f'ulimit -d {DATA_LIMIT_KIB} && exec "$0" "$@"', str(BIN),
                           *map(str, args)], capture_output=True, text=True, cwd=cwd, env=case_env({}),
                          timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"seed command failed: paisoar {' '.join(map(str, args))}\n{done.stdout}\n{done.stderr}")
    return done


@dataclass
class Seeds:
    root: Path

    @property
    def idx(self):
        return self.root / "idx"

    @property
    def images(self):
        return self.root / "images"

    @property
    def shards(self):
        return self.root / "shards"

    @property
    def run(self):
        return self.root / "run"

    @property
    def zero_run(self):
        return self.root / "zero_run"

    def run_sets(self, run_dir):
        """The seed runs' settings: the mlp on the IDX set, a checkpoint every step."""
        return sets("model.name=mlp", "model.hidden=[16]", f"data.path={self.idx}", "checkpoint.every_steps=1",
                    f"run_dir={run_dir}")

    def defaults_text(self):
        """`paisoar train --print-config`: every key with its default."""
        return (self.root / "defaults.yaml").read_text()

    @property
    def zero_reference(self):
        """The newest ZeRO checkpoint consolidated from its intact shards."""
        return self.root / "zero_reference.safetensors"

    def checkpoints(self):
        return sorted((self.run / "checkpoints").glob("step-*.safetensors"))

    def zero_dirs(self):
        return sorted(p for p in (self.zero_run / "checkpoints").iterdir() if p.is_dir())


def make_seeds(root):
    s = Seeds(Path(root) / "seeds")
    s.root.mkdir(parents=True)
    (s.root / "defaults.yaml").write_text(paisoar("train", "--print-config").stdout)
    idx_set(s.idx, count=64)
    image_folder(s.images)
    paisoar("convert", "folder", "--root", s.images, "--out", s.shards, "--quiet")
    paisoar("train", *tiny(), *s.run_sets(s.run))
    paisoar("train", *tiny(2), *s.run_sets(s.zero_run), *sets("zero.stage=1"))
    assert len(s.checkpoints()) == 2 and len(s.zero_dirs()) == 2, "the seed runs wrote no checkpoints"
    paisoar("zero-consolidate", s.zero_dirs()[-1], s.zero_reference)
    return s


def copy_tree(source, target):
    shutil.copytree(source, target, symlinks=True)
    return target
