"""IDX images and labels, damaged, read by `paisoar train` (data.format idx)
and `paisoar convert idx`: the gzip stream cut or flipped, the IDX content
cut at many offsets, every header byte changed (magic, type code, rank,
dimensions), sizes that disagree between the files, lying and huge
dimensions, not gzip, and files that are not regular. A damaged file must be
refused naming it; exit 0 is right only where the data is still valid IDX
with the same meaning (a pixel byte, a label still in range, a gzip header
field that carries no data)."""
import functools
import gzip
import os
import struct
import zlib

from case import Case, Prepared
from mutate import cut_offsets, flips, junk, with_byte
from seeds import sets, tiny

IMAGES, LABELS = "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"
COUNT, SIDE = 64, 28
IMAGES_HEADER, LABELS_HEADER = 16, 8


def gz(raw):
    return gzip.compress(raw, mtime=0)


def header(type_code, dims):
    return bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims)


def gunzip_or_none(data):
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error):
        return None


class IdxFamily:
    """Builds the cases; `damage(dir)` edits the copied set in `dir`."""

    def __init__(self, seeds):
        self.seeds = seeds
        self.raw = {name: gzip.decompress((seeds.idx / name).read_bytes()) for name in (IMAGES, LABELS)}
        self.cases = []

    def add(self, family, name, what, damage, file, accept=None, convert_accept=None, count=COUNT):
        """One case per command; `convert_accept` is why convert, which knows no model, may take it;
        `count`: the samples an accepted run must report."""
        for command, why in (("train", accept), ("convert", convert_accept or accept)):
            self.cases.append(Case(f"{command}-{family}", name, what, self.prepare(command, damage, file, count), why))

    def prepare(self, command, damage, file, count):
        def prepare(where):
            data = where / "idx"
            data.mkdir()
            for p in self.seeds.idx.iterdir():
                (data / p.name).write_bytes(gz(gzip.decompress(p.read_bytes())))
            damage(data)
            target = str(data / file)
            if command == "train":
                # Two steps of 32: one epoch, so every sample is read.
                args = ["train", *tiny(batch=32),
                        *sets(f"data.path={data}", f"run_dir={where / 'run'}", "data.eval_limit=16")]
                return Prepared(args, [target], check=lambda run: read_all(run, count, "samples"))
            args = ["convert", "idx", "--images", data / IMAGES, "--labels", data / LABELS, "--out", where / "out",
                    "--quiet"]
            return Prepared(args, [target], check=lambda run: read_all(run, count, "records"))
        return prepare

    def write(self, name, data_bytes):
        return lambda d: (d / name).write_bytes(data_bytes)

    def build(self, quick_seed=0):
        raw_images, raw_labels = self.raw[IMAGES], self.raw[LABELS]
        for name, raw, head in ((IMAGES, raw_images, IMAGES_HEADER), (LABELS, raw_labels, LABELS_HEADER)):
            short = "images" if name == IMAGES else "labels"
            packed = gz(raw)
            for at in cut_offsets(len(packed), 10, header=12):
                self.add("idx/gzip-cut", f"{short}@{at}", f"{name}: the gzip file cut to {at} bytes",
                         self.write(name, packed[:at]), name)
            for i, (at, value) in enumerate(flips(packed, 12, seed=hash_seed(short, 1))):
                damaged = with_byte(packed, at, value)
                same = gunzip_or_none(damaged) == raw
                self.add("idx/gzip-flip", f"{short}-{i}@{at}={value:#04x}",
                         f"{name}: gzip byte {at} set to {value:#04x}", self.write(name, damaged), name,
                         "the gzip stream still decompresses to the same data (a header field like the time "
                         "carries none)" if same else None)
            for at in cut_offsets(len(raw), 8, header=head + 1)[:-1] + [len(raw) - 1]:
                self.add("idx/content-cut", f"{short}@{at}", f"{name}: the IDX content cut to {at} bytes (gzipped)",
                         self.write(name, gz(raw[:at])), name)
            for at in range(head):
                for value in sorted({raw[at] ^ 0x01, 0xFF} - {raw[at]}):
                    damaged = with_byte(raw, at, value)
                    self.add("idx/header-byte", f"{short}-{at}={value:#04x}",
                             f"{name}: header byte {at} set to {value:#04x}", self.write(name, gz(damaged)), name,
                             same_meaning(name, at, value, raw))
        self.data_flips(raw_images, raw_labels)
        self.lying_sizes()
        self.not_gzip(raw_images)
        self.not_regular()
        return self.cases

    def data_flips(self, raw_images, raw_labels):
        for i, (at, value) in enumerate(flips(raw_images, 6, seed=7, start=IMAGES_HEADER)):
            self.add("idx/pixel-flip", f"{i}@{at}={value:#04x}", f"{IMAGES}: pixel byte {at} set to {value:#04x}",
                     self.write(IMAGES, gz(with_byte(raw_images, at, value))), IMAGES,
                     "any byte is a valid uint8 pixel")
        for at, value in ((8, 9), (20, 10), (30, 255), (71, 128)):
            self.add("idx/label-value", f"{at}={value}", f"{LABELS}: label byte {at} set to {value}",
                     self.write(LABELS, gz(with_byte(raw_labels, at, value))), LABELS,
                     "a label in [0, 10) is a valid class" if value < 10 else None,
                     "convert knows no class count: it stores the labels as they are, one class per label "
                     "value up to the largest (training then checks them against model.num_classes)")
        self.skipped_labels(raw_labels)

    def skipped_labels(self, raw_labels):
        """Labels out of range under data.on_error: skip: one is skipped and the
        run's end says so naming the labels file; all of them stop the run
        naming the labels file and why."""
        def prepare_skip(damage, check):
            def prepare(where):
                data = where / "idx"
                data.mkdir()
                for p in self.seeds.idx.iterdir():
                    (data / p.name).write_bytes(gz(gzip.decompress(p.read_bytes())))
                damage(data)
                args = ["train", *tiny(batch=32), *sets(f"data.path={data}", f"run_dir={where / 'run'}",
                                                        "data.eval_limit=16", "data.on_error=skip")]
                return Prepared(args, [str(data / LABELS)], check=check(data))
            return prepare
        one = with_byte(raw_labels, LABELS_HEADER + 5, 255)
        said = lambda data: lambda run: None if ("1 of 64 samples read were bad and skipped" in
                                                 run.out.decode(errors="replace") and
                                                 str(data / LABELS) in run.out.decode(errors="replace")) \
            else "its end did not say 1 of 64 samples were skipped, naming the labels file"
        self.cases.append(Case("train-idx/label-skip", "one-255", f"{LABELS}: one label 255 under data.on_error: skip",
                               prepare_skip(self.write(LABELS, gz(one)), said),
                               "data.on_error: skip drops the sample and says so at the end"))
        every = raw_labels[:LABELS_HEADER] + bytes([255]) * (len(raw_labels) - LABELS_HEADER)
        self.cases.append(Case("train-idx/label-skip", "all-255", f"{LABELS}: every label 255 under data.on_error: skip",
                               prepare_skip(self.write(LABELS, gz(every)), lambda data: None)))

    def lying_sizes(self):
        pixels, labels = self.raw[IMAGES][IMAGES_HEADER:], self.raw[LABELS][LABELS_HEADER:]
        lies = [
            ("images-63", IMAGES, header(8, [63, SIDE, SIDE]) + pixels[:63 * SIDE * SIDE], "63 images, 64 labels"),
            ("labels-63", LABELS, header(8, [63]) + labels[:63], "64 images, 63 labels"),
            ("images-14x56", IMAGES, header(8, [COUNT, 14, 56]) + pixels, "64 images of 14x56 (same bytes)"),
            ("images-32x32", IMAGES, header(8, [COUNT, 32, 32]) + bytes(COUNT * 32 * 32), "64 images of 32x32"),
            ("images-rank-2", IMAGES, header(8, [COUNT, SIDE * SIDE]) + pixels, "images as [64, 784]"),
            ("images-rank-4", IMAGES, header(8, [COUNT, 1, SIDE, SIDE]) + pixels, "images as [64, 1, 28, 28]"),
            ("labels-rank-2", LABELS, header(8, [COUNT, 1]) + labels, "labels as [64, 1]"),
            ("labels-float", LABELS, header(0x0D, [COUNT]) + b"".join(struct.pack(">f", b) for b in labels),
             "float32 labels"),
            ("images-int8", IMAGES, header(0x09, [COUNT, SIDE, SIDE]) + pixels, "int8 images (pixels over 127 negative)"),
            ("images-float", IMAGES, header(0x0D, [COUNT, SIDE, SIDE]) + b"".join(struct.pack(">f", b) for b in pixels),
             "float32 images"),
            ("images-zero", IMAGES, header(8, [0, SIDE, SIDE]), "0 images (and 0 labels)"),
            ("images-as-labels", LABELS, self.raw[IMAGES], "the images file given as the labels"),
            ("count-2^32-1", IMAGES, header(8, [2**32 - 1, SIDE, SIDE]) + pixels, "a header announcing 2^32-1 images"),
            ("side-65535", IMAGES, header(8, [COUNT, 65535, 65535]) + pixels, "a header announcing 65535x65535 images"),
            ("rank-255", IMAGES, header(8, [1] * 255) + pixels, "a header with 255 dimensions"),
        ]
        valid_for_convert = {
            "images-14x56": "convert knows no model: 64 images of 14x56 are valid data",
            "images-32x32": "convert knows no model: 64 images of 32x32 are valid data",
            "images-zero": "an IDX set of 0 images is valid and converts to an empty shard set (training on it "
                           "is refused)",
        }
        for name, file, content, what in lies:
            if name == "images-zero":
                damage = lambda d, c=content: ((d / IMAGES).write_bytes(gz(c)), (d / LABELS).write_bytes(gz(header(8, [0]))))
            else:
                damage = self.write(file, gz(content))
            self.add("idx/lying-size", name, f"{file}: {what}", damage, file, None, valid_for_convert.get(name),
                     0 if name == "images-zero" else COUNT)
        int32 = header(0x0C, [COUNT]) + b"".join(struct.pack(">i", b) for b in labels)
        self.add("idx/lying-size", "labels-int32", f"{LABELS}: int32 labels with the same values",
                 self.write(LABELS, gz(int32)), LABELS, "int32 labels with values in [0, 10) are valid IDX labels")

    def not_gzip(self, raw_images):
        accept_plain = "the IDX content is intact; the reader takes plain files as well as gzip"
        self.add("idx/not-gzip", "plain", f"{IMAGES}: plain IDX, not gzipped", self.write(IMAGES, raw_images), IMAGES,
                 accept_plain)
        self.add("idx/not-gzip", "junk", f"{IMAGES}: 4096 random bytes", self.write(IMAGES, junk(4096, 11)), IMAGES)
        self.add("idx/not-gzip", "gzip-of-junk", f"{IMAGES}: gzip of 4096 random bytes",
                 self.write(IMAGES, gz(junk(4096, 12))), IMAGES)
        self.add("idx/not-gzip", "empty", f"{IMAGES}: an empty file", self.write(IMAGES, b""), IMAGES)
        self.add("idx/not-gzip", "zlib-not-gzip", f"{IMAGES}: a zlib stream, not gzip",
                 self.write(IMAGES, zlib.compress(raw_images)), IMAGES)
        self.add("idx/not-gzip", "two-members", f"{IMAGES}: the content in two gzip members",
                 self.write(IMAGES, gz(raw_images[:1000]) + gz(raw_images[1000:])), IMAGES,
                 "a gzip file may hold several members; together they hold the same data")
        self.add("idx/not-gzip", "trailing-junk", f"{IMAGES}: 100 random bytes after the gzip member",
                 self.write(IMAGES, gz(raw_images) + junk(100, 13)), IMAGES,
                 "the gzip member holds the intact data; zlib, like gzip(1), ignores what follows the last member")
        self.add("idx/not-gzip", "bomb-1GiB", f"{IMAGES}: a 64-image header then 1 GiB of zeros, gzipped (~1 MB)",
                 lambda d: (d / IMAGES).write_bytes(zero_bomb(raw_images[:IMAGES_HEADER], 1 << 30)), IMAGES)

    def not_regular(self):
        for file in (IMAGES, LABELS):
            short = "images" if file == IMAGES else "labels"
            kinds = {
                "directory": lambda p: p.mkdir(),
                "fifo": lambda p: os.mkfifo(p),
                "dangling-symlink": lambda p: p.symlink_to(p.parent / "nowhere"),
                "dev-zero": lambda p: p.symlink_to("/dev/zero"),
                "dev-null": lambda p: p.symlink_to("/dev/null"),
                "sparse-6GiB": lambda p: sparse(p, 6 << 30),
                "header-then-sparse-6GiB": lambda p, f=file: sparse(p, 6 << 30, self.raw[f][:16]),
            }
            for kind, make in kinds.items():
                self.add("idx/not-regular", f"{short}-{kind}", f"{file}: {kind.replace('-', ' ')}",
                         lambda d, f=file, m=make: ((d / f).unlink(), m(d / f)), file)


def same_meaning(name, at, value, raw):
    """Why a changed header byte still means the same data, or None."""
    if name == LABELS and at == 2 and value == 0x09 and max(raw[LABELS_HEADER:]) < 128:
        return "int8 labels with values in [0, 10) are the same labels"
    return None


@functools.cache
def zero_bomb(head, size):
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing
    chunk = bytes(1 << 20)
    parts = [compressor.compress(head)]
    for _ in range(size >> 20):
        parts.append(compressor.compress(chunk))
    parts.append(compressor.flush())
    return b"".join(parts)


def sparse(path, size, head=b""):
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)


def read_all(run, count, unit):
    """An exit-0 check: the run read all `count` samples (none dropped)."""
    text = run.out.decode(errors="replace")
    return None if f" {count} {unit}" in text else f"it did not report {count} {unit}: {text[-300:]!r}"


def hash_seed(text, salt):
    return zlib.crc32(text.encode()) * 31 + salt


def cases(seeds):
    return IdxFamily(seeds).build()
