"""Images in an image folder, damaged, read by `paisoar train` (data.format
folder): PNGs and JPEGs cut at many offsets, bytes flipped, headers that lie
about the size (IHDR, SOF) with their checksums made right, huge announced
sizes, valid variants (16-bit, palette, interlaced, progressive, CMYK...),
and entries that are not regular files. Pillow is the oracle: exit 0 is
right only for a file Pillow decodes too (then all 8 images must be used),
else the error must name the file."""
import io
import os
import struct
import warnings
import zlib

from PIL import Image

from case import Case, Prepared
from mutate import cut_offsets, flips, with_byte, with_bytes
from seeds import IMAGE_MODEL, IMAGES_PER_CLASS, copy_tree, jpeg_bytes, sets, tiny

PNG_NAME, JPEG_NAME = "a/000.png", "a/002.jpg"
ALL = 2 * IMAGES_PER_CLASS
PILLOW_DECODES = "Pillow decodes this file too: it is still an image, so training on it is right"


def pillow_decodes(data):
    warnings.simplefilter("ignore", Image.DecompressionBombWarning)
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
        return True
    except Exception:  # noqa: BLE001  (any refusal by Pillow)
        return False


def used_all(counts):
    """An exit-0 check: the run used one of `counts` samples (none dropped, none doubled)."""
    def check(run):
        text = run.out.decode(errors="replace")
        if any(f" {n} samples" in text for n in counts):
            return None
        return f"it did not report {' or '.join(map(str, counts))} samples: {text[-300:]!r}"
    return check


def image_case(seeds, family, name, what, file, damage, accept, counts=(ALL,), names=None):
    """A case that copies the image folder, calls damage(path of `file`), and trains;
    `names(root)`: what the error may name (default: the file)."""
    def prepare(where):
        root = copy_tree(seeds.images, where / "images")
        damage(root / file)
        args = ["train", *tiny(), *IMAGE_MODEL, *sets("data.format=folder", f"data.path={root}",
                                                      f"run_dir={where / 'run'}")]
        return Prepared(args, names(root) if names else [str(root / file)], check=used_all(counts))
    return Case(family, name, what, prepare, accept)


def content_case(seeds, family, name, what, file, data):
    """A case whose file gets `data`; Pillow decides whether exit 0 is right."""
    return image_case(seeds, family, name, what, file, lambda p: p.write_bytes(data),
                      PILLOW_DECODES if pillow_decodes(data) else None)


def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def with_ihdr(png, **fields):
    """The PNG with IHDR fields replaced and its CRC made right (a consistent lie)."""
    w, h, depth, color, comp, filt, lace = struct.unpack(">IIBBBBB", png[16:29])
    values = dict(width=w, height=h, depth=depth, color=color, comp=comp, filt=filt, lace=lace)
    values.update(fields)
    body = struct.pack(">IIBBBBB", *values.values())
    return png[:8] + chunk(b"IHDR", body) + png[33:]


def sof_offset(jpeg):
    for marker in (b"\xff\xc0", b"\xff\xc2"):
        at = jpeg.find(marker)
        if at >= 0:
            return at
    raise ValueError("no SOF marker")


def with_sof(jpeg, height=None, width=None, components=None, precision=None):
    at = sof_offset(jpeg)  # FFC0, length (2), precision (1), height (2), width (2), components (1)
    out = jpeg
    if precision is not None:
        out = with_byte(out, at + 4, precision)
    if height is not None:
        out = with_bytes(out, at + 5, struct.pack(">H", height))
    if width is not None:
        out = with_bytes(out, at + 7, struct.pack(">H", width))
    if components is not None:
        out = with_byte(out, at + 9, components)
    return out


def saved(image, fmt, **options):
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def png_cases(seeds):
    png = (seeds.images / PNG_NAME).read_bytes()
    out = []
    for at in sorted(set(cut_offsets(len(png), 10)) | {4, 8, 16, 29, 33, len(png) - 12, len(png) - 4}):
        out.append(content_case(seeds, "images/png-cut", f"@{at}", f"{PNG_NAME} cut to {at} bytes", PNG_NAME,
                                png[:at]))
    for i, (at, value) in enumerate(flips(png, 12, seed=41)):
        out.append(content_case(seeds, "images/png-flip", f"{i}@{at}={value:#04x}",
                                f"{PNG_NAME} byte {at} set to {value:#04x}", PNG_NAME, with_byte(png, at, value)))
    lies = {"width-0": dict(width=0), "height-0": dict(height=0), "width-1": dict(width=1), "width-33": dict(width=33),
            "height-64": dict(height=64), "side-10000": dict(width=10000, height=10000),
            "side-20000": dict(width=20000, height=20000), "side-2^31-1": dict(width=2**31 - 1, height=2**31 - 1),
            "side-2^32-1": dict(width=2**32 - 1, height=1), "depth-16": dict(depth=16), "depth-3": dict(depth=3),
            "color-rgb": dict(color=2), "color-palette": dict(color=3), "color-7": dict(color=7),
            "compression-1": dict(comp=1), "filter-1": dict(filt=1), "interlace-1": dict(lace=1),
            "interlace-2": dict(lace=2)}
    for name, fields in lies.items():
        out.append(content_case(seeds, "images/png-ihdr-lie", name, f"{PNG_NAME} whose IHDR says {fields} (CRC right)",
                                PNG_NAME, with_ihdr(png, **fields)))
    base = Image.open(io.BytesIO(png)).convert("L")
    variants = {"rgb": saved(base.convert("RGB"), "PNG"), "rgba": saved(base.convert("RGBA"), "PNG"),
                "gray-alpha": saved(base.convert("LA"), "PNG"), "palette": saved(base.convert("P"), "PNG"),
                "1-bit": saved(base.convert("1"), "PNG"), "16-bit": saved(base.convert("I;16"), "PNG"),
                "interlaced": interlaced_png(png),
                "1x1": saved(base.resize((1, 1)), "PNG"), "1x4000": saved(base.resize((1, 4000)), "PNG"),
                "text-chunk": png[:33] + chunk(b"tEXt", b"Comment\x00hello") + png[33:],
                "unknown-critical-chunk": png[:33] + chunk(b"ABCD", b"xyz") + png[33:],
                "png-named-jpg": png}
    for name, data in variants.items():
        file = JPEG_NAME if name == "png-named-jpg" else PNG_NAME
        out.append(content_case(seeds, "images/png-variant", name, f"{file}: a PNG variant: {name}", file, data))
    return out


def interlaced_png(png):
    """The seed image as an Adam7-interlaced 8-bit gray PNG, written by hand (Pillow writes none)."""
    im = Image.open(io.BytesIO(png)).convert("L")
    w, h = im.size
    px = im.tobytes()
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    raw = b""
    for x0, y0, dx, dy in passes:
        for y in range(y0, h, dy):
            row = bytes(px[y * w + x] for x in range(x0, w, dx))
            if row:
                raw += b"\x00" + row
    body = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 1)
    return png[:8] + chunk(b"IHDR", body) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def jpeg_cases(seeds):
    jpeg = (seeds.images / JPEG_NAME).read_bytes()
    sos = jpeg.find(b"\xff\xda")
    out = []
    for at in sorted(set(cut_offsets(len(jpeg), 10)) | {2, sof_offset(jpeg) + 5, sos, sos + 20, len(jpeg) - 2}):
        out.append(content_case(seeds, "images/jpeg-cut", f"@{at}", f"{JPEG_NAME} cut to {at} bytes", JPEG_NAME,
                                jpeg[:at]))
    for i, (at, value) in enumerate(flips(jpeg, 8, seed=42, end=sos) + flips(jpeg, 8, seed=43, start=sos + 14)):
        where = "header" if at < sos else "scan"
        out.append(content_case(seeds, "images/jpeg-flip", f"{i}-{where}@{at}={value:#04x}",
                                f"{JPEG_NAME} byte {at} (in the {where}) set to {value:#04x}", JPEG_NAME,
                                with_byte(jpeg, at, value)))
    lies = {"height-0": dict(height=0), "width-0": dict(width=0), "side-1": dict(height=1, width=1),
            "height-64": dict(height=64), "side-65535": dict(height=65535, width=65535),
            "side-8000": dict(height=8000, width=8000), "components-1": dict(components=1),
            "components-4": dict(components=4), "components-0": dict(components=0), "precision-12": dict(precision=12),
            "precision-16": dict(precision=16)}
    for name, fields in lies.items():
        out.append(content_case(seeds, "images/jpeg-sof-lie", name, f"{JPEG_NAME} whose SOF says {fields}", JPEG_NAME,
                                with_sof(jpeg, **fields)))
    base = Image.open(io.BytesIO(jpeg))
    variants = {"progressive": jpeg_bytes(32, 99, progressive=True), "gray": saved(base.convert("L"), "JPEG"),
                "cmyk": saved(base.convert("CMYK"), "JPEG"), "subsampling-444": saved(base, "JPEG", subsampling=0),
                "restart-markers": saved(base, "JPEG", restart_marker_blocks=1),
                "exif-rotated": saved(base, "JPEG", exif=exif_orientation(6)), "jpeg-named-png": jpeg}
    for name, data in variants.items():
        file = PNG_NAME if name == "jpeg-named-png" else JPEG_NAME
        out.append(content_case(seeds, "images/jpeg-variant", name, f"{file}: a JPEG variant: {name}", file, data))
    return out


def exif_orientation(value):
    exif = Image.Exif()
    exif[0x0112] = value
    return exif.tobytes()


def not_regular(seeds):
    extra = "a/x.jpg"
    kinds = {
        "fifo": (lambda p: os.mkfifo(p), None), "dangling-symlink": (lambda p: p.symlink_to("/nonexistent"), None),
        "dev-zero": (lambda p: p.symlink_to("/dev/zero"), None),
        "dev-urandom": (lambda p: p.symlink_to("/dev/urandom"), None),
        "sparse-6GiB": (lambda p: sparse(p, 6 << 30), None), "empty": (lambda p: p.write_bytes(b""), None),
        "text": (lambda p: p.write_text("not an image\n"), None),
        "directory-named-jpg": (lambda p: p.mkdir(), "a directory is not an image: the scan finds none in it"),
        "symlink-to-image": (lambda p: p.symlink_to(p.parent / "000.png"), "a link to an image is that image"),
        "no-extension": (lambda p: (p.parent / "x").write_bytes(b"junk"),
                         "only .jpg, .jpeg and .png files are images (the documented rule); 'x' is not one"),
        "uppercase-extension": (lambda p: (p.parent / "X.PNG").write_bytes((p.parent / "000.png").read_bytes()),
                                "an image with an upper-case extension, counted or not"),
    }
    counts = {"symlink-to-image": (ALL + 1,), "uppercase-extension": (ALL, ALL + 1)}
    out = []
    for kind, (make, accept) in kinds.items():
        out.append(image_case(seeds, "images/not-regular", kind, f"{extra}: {kind.replace('-', ' ')}", extra, make,
                              accept, counts.get(kind, (ALL,))))
    return out


def folder_shape(seeds):
    """The folder itself: loops, empty classes, files outside classes, nothing at all."""
    def loop(p):
        (p.parent / "loop").symlink_to(p.parent)

    def empty_class(p):
        (p.parent.parent / "c").mkdir()

    def root_file(p):
        (p.parent.parent / "stray.png").write_bytes((p.parent / "000.png").read_bytes())

    def no_images(p):
        for c in ("a", "b"):
            for f in (p.parent.parent / c).iterdir():
                f.unlink()

    def nested(p):
        (p.parent / "x" / "y").mkdir(parents=True)
        (p.parent / "x" / "y" / "z.png").write_bytes((p.parent / "000.png").read_bytes())

    shapes = {
        "symlink-loop": (loop, "the loop's images are the class's own: 8 samples, no hang", ALL),
        "empty-class": (empty_class, None, ALL),
        "file-at-root": (root_file, "a file outside every class is not a sample (the documented layout)", ALL),
        "no-images": (no_images, None, 0),
        "nested-dirs": (nested, "images in subfolders of a class belong to it: 9 samples", ALL + 1),
    }
    names = {"empty-class": lambda root: [str(root / "c")], "no-images": lambda root: [str(root)],
             "symlink-loop": lambda root: [str(root / "a" / "loop")]}
    return [image_case(seeds, "images/folder-shape", name, f"the image folder: {name.replace('-', ' ')}", "a/000.png",
                       make, accept, (count,), names.get(name)) for name, (make, accept, count) in shapes.items()]


def sparse(path, size):
    with open(path, "wb") as f:
        f.truncate(size)


def cases(seeds):
    return png_cases(seeds) + jpeg_cases(seeds) + not_regular(seeds) + folder_shape(seeds)
