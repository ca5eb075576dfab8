"""Record shards (`paisoar convert` output) damaged, read by `paisoar train`
(data.format shards): the manifest dataset.json, the shard index .tar.idx
and the shard .tar each cut at many offsets, flipped, given lying or
wrongly typed values, replaced by files that are not regular; and shards
converted from damaged images. Exit 0 is right only where the damaged files
still mean the same records (a tar header byte the reader never reads, a
hex digit's case), else the error must name the damaged file."""
import json
import os
import re

from case import Case, Prepared
from mutate import cut_offsets, flips, with_byte
from seeds import IMAGE_MODEL, copy_tree, paisoar, sets, tiny
from family_images import JPEG_NAME, PNG_NAME, pillow_decodes, used_all, with_ihdr

MANIFEST, TAR, INDEX = "dataset.json", "shard-000000.tar", "shard-000000.tar.idx"
RECORDS = 8
SAME_RECORDS = "the damaged file still describes the same records (the oracle compares them), so training is right"
INDEX_LINE = re.compile(r"([A-Za-z0-9_-]{1,90})\t(-?[0-9]{1,20})\t([0-9]{1,20})\t([0-9]{1,20})\t"
                        r"([0-9a-fA-F]{8})\t([a-z0-9]{1,16})")


def train_shards(root, where):
    return ["train", *tiny(), *IMAGE_MODEL, *sets("data.format=shards", f"data.path={root}", f"run_dir={where / 'run'}")]


def shard_case(seeds, family, name, what, file, damage, accept=None, counts=(RECORDS,)):
    """A damaged index may be reported as its shard (a CRC mismatch cannot tell which of the two is wrong),
    a damaged manifest as a file it lists."""
    def prepare(where):
        root = copy_tree(seeds.shards, where / "shards")
        damage(root / file)
        names = [str(root / file)] + ([str(root / TAR)] if file == INDEX else [])
        if file == MANIFEST:  # a manifest's lie may first show in a file it lists
            names += [str(root / TAR), str(root / INDEX), str(root / "shard-000009.tar")]
        return Prepared(train_shards(root, where), names, check=used_all(counts))
    return Case(family, name, what, prepare, accept)


def content(seeds, family, name, what, file, data, same):
    return shard_case(seeds, family, name, what, file, lambda p: p.write_bytes(data), SAME_RECORDS if same else None)


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key")
    return dict(pairs)


def manifest_meaning(data):
    """The manifest's content with strict types, or None if it is not one."""
    try:
        m = json.loads(data.decode("utf-8"), object_pairs_hook=no_duplicates)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return json.dumps(m, sort_keys=True)  # 8 and 8.0 differ here


def index_meaning(data):
    """[(label, offset, size, crc)] of a strictly valid index, or None."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    head = re.fullmatch(r"# paisoar-shard-index v1 records=([0-9]{1,20})", lines[0] if lines else "")
    if not head or int(head.group(1)) != len(lines) - 1:
        return None
    out = []
    for line in lines[1:]:
        m = INDEX_LINE.fullmatch(line)
        if not m:
            return None
        out.append((int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5), 16)))
    return out


def padded(n):
    return (n + 511) // 512 * 512


def tar_meaning(tar, entries):
    """Each record's payload and label member, read where the index says."""
    out = []
    for label, offset, size, _ in entries:
        label_at = offset + padded(size) + 512
        out.append((tar[offset:offset + size], tar[label_at:label_at + len(str(label))], len(tar) >= label_at + 512 + 1024))
    return out


def manifest_cases(seeds):
    data = (seeds.shards / MANIFEST).read_bytes()
    meaning = manifest_meaning(data)
    original = json.loads(data)
    out = [content(seeds, "shards/manifest-cut", f"@{at}", f"{MANIFEST} cut to {at} bytes", MANIFEST, data[:at],
                   manifest_meaning(data[:at]) == meaning) for at in cut_offsets(len(data), 14)]
    for i, (at, value) in enumerate(flips(data, 14, seed=51)):
        damaged = with_byte(data, at, value)
        out.append(content(seeds, "shards/manifest-flip", f"{i}@{at}={value:#04x}",
                           f"{MANIFEST} byte {at} set to {value:#04x}",
                           MANIFEST, damaged, manifest_meaning(damaged) == meaning))
    shard = original["shards"][0]
    edits = {
        "format-v2": {"format": "paisoar-shards-v2"}, "format-number": {"format": 5}, "format-missing": {"format": None},
        "classes-string": {"classes": "ab"}, "classes-numbers": {"classes": [1, 2]}, "classes-one": {"classes": ["a"]},
        "classes-three": {"classes": ["a", "b", "c"]}, "classes-same-name": {"classes": ["a", "a"]},
        "classes-null": {"classes": None}, "records-string": {"records": "8"}, "records-8.5": {"records": 8.5},
        "records-8.0": {"records": 8.0}, "records-minus-1": {"records": -1}, "records-9": {"records": 9},
        "records-2^63": {"records": 2**63}, "records-1e30": {"records": 1e30}, "records-true": {"records": True},
        "shards-object": {"shards": {}}, "shards-empty": {"shards": []}, "shards-number": {"shards": [5]},
        "file-number": {"shards": [{**shard, "file": 5}]}, "file-parent": {"shards": [{**shard, "file": "../x.tar"}]},
        "file-absolute": {"shards": [{**shard, "file": "/etc/passwd"}]}, "file-empty": {"shards": [{**shard, "file": ""}]},
        "file-missing": {"shards": [{**shard, "file": "shard-000009.tar"}]},
        "file-index": {"shards": [{**shard, "file": INDEX}]},
        "shard-records-9": {"shards": [{**shard, "records": 9}], "records": 9},
        "shard-records-7": {"shards": [{**shard, "records": 7}], "records": 7},
        "shard-twice": {"shards": [shard, shard], "records": 16},
        "shard-records-2^62": {"shards": [{**shard, "records": 2**62}, {**shard, "records": 2**62}], "records": 2**63 - 1},
    }
    harmless = {"classes-same-name": "class names are for display: the labels are the same",
                "classes-three": "every label in the shards is below model.num_classes; the third class has no sample",
                "records-8.0": "8.0 is the number 8 in JSON"}
    for name, edit in edits.items():
        m = {k: v for k, v in {**original, **edit}.items() if v is not None}
        out.append(shard_case(seeds, "shards/manifest-lie", name, f"{MANIFEST} with {json.dumps(edit)[:70]}", MANIFEST,
                              lambda p, d=json.dumps(m).encode(): p.write_bytes(d), harmless.get(name)))
    texts = {
        "unknown-field": (json.dumps({**original, "comment": "x"}), "an unknown field changes no record"),
        "records-missing": (json.dumps({k: v for k, v in original.items() if k != "records"}),
                            "the total is optional: the shards' counts give it"),
        "duplicate-classes": (data.decode().replace('"classes": [', '"classes": ["b", "a"], "classes": [', 1), None),
        "top-level-list": ("[]", None), "top-level-string": ('"x"', None), "empty": ("", None),
        "whitespace": ("   \n", None), "deep-nesting-100k": ('{"classes": ' + "[" * 100000 + "]" * 100000 + "}", None),
        "bom": ("\ufeff" + data.decode(), "a UTF-8 byte-order mark before the same JSON"),
        "nul-after": (data.decode() + "\x00", None),
    }
    for name, (text, accept) in texts.items():
        out.append(shard_case(seeds, "shards/manifest-lie", name, f"{MANIFEST}: {name.replace('-', ' ')}", MANIFEST,
                              lambda p, t=text: p.write_bytes(t.encode()), accept))
    return out


def index_cases(seeds):
    data = (seeds.shards / INDEX).read_bytes()
    meaning = index_meaning(data)
    out = [content(seeds, "shards/index-cut", f"@{at}", f"{INDEX} cut to {at} bytes", INDEX, data[:at],
                   index_meaning(data[:at]) == meaning) for at in cut_offsets(len(data), 14)]
    for i, (at, value) in enumerate(flips(data, 16, seed=52)):
        damaged = with_byte(data, at, value)
        out.append(content(seeds, "shards/index-flip", f"{i}@{at}={value:#04x}", f"{INDEX} byte {at} set to {value:#04x}",
                           INDEX, damaged, index_meaning(damaged) == meaning))
    lines = data.decode().split("\n")
    first = lines[1].split("\t")

    def line0(**fields):
        f = dict(zip(("key", "label", "offset", "size", "crc", "ext"), first))
        f.update(fields)
        return "\n".join([lines[0], "\t".join(f.values())] + lines[2:]).encode()

    edits = {
        "count-9": data.replace(b"records=8", b"records=9"), "count-0": data.replace(b"records=8", b"records=0"),
        "count-huge": data.replace(b"records=8", b"records=99999999999999999999"),
        "label-other-class": line0(label="1"), "label-minus-1": line0(label="-1"), "label-2": line0(label="2"),
        "label-int64-max": line0(label="9223372036854775807"), "offset-0": line0(offset="0"),
        "offset-huge": line0(offset="18446744073709551615"), "offset-unaligned": line0(offset=str(int(first[2]) + 1)),
        "size-0": line0(size="0"), "size-plus-1": line0(size=str(int(first[3]) + 1)),
        "size-huge": line0(size="18446744073709551615"), "crc-upper": line0(crc=first[4].upper()),
        "crc-wrong": line0(crc="00000000"), "ext-jpg": line0(ext="jpg"), "ext-gif": line0(ext="gif"),
        "key-duplicate": line0(key=lines[2].split("\t")[0]), "key-path": line0(key="../x"),
        "crlf": data.replace(b"\n", b"\r\n"), "blank-line-after": data + b"\n",
        "spaces-not-tabs": data.replace(b"\t", b" "),
    }
    same = {"crc-upper", "ext-jpg", "ext-gif"}
    by_content = "the payload is decoded by its content, which is intact"
    why = {"crc-upper": "the same CRC in upper-case hex", "ext-jpg": by_content, "ext-gif": by_content}
    for name, damaged in edits.items():
        accept = why[name] if name in same else None
        out.append(shard_case(seeds, "shards/index-lie", name, f"{INDEX}: {name.replace('-', ' ')}", INDEX,
                              lambda p, d=damaged: p.write_bytes(d), accept))
    return out


def tar_cases(seeds):
    tar = (seeds.shards / TAR).read_bytes()
    entries = index_meaning((seeds.shards / INDEX).read_bytes())
    meaning = tar_meaning(tar, entries)
    cuts = sorted(set(cut_offsets(len(tar), 14)) | {len(tar) - 1024, len(tar) - 512})
    out = [content(seeds, "shards/tar-cut", f"@{at}", f"{TAR} cut to {at} bytes", TAR, tar[:at],
                   tar_meaning(tar[:at], entries) == meaning) for at in cuts]
    for i, (at, value) in enumerate(flips(tar, 16, seed=53)):
        damaged = with_byte(tar, at, value)
        out.append(content(seeds, "shards/tar-flip", f"{i}@{at}={value:#04x}", f"{TAR} byte {at} set to {value:#04x}",
                           TAR, damaged, tar_meaning(damaged, entries) == meaning))
    return out


def not_regular(seeds):
    kinds = {
        "missing": lambda p: p.unlink(), "directory": lambda p: (p.unlink(), p.mkdir()),
        "fifo": lambda p: (p.unlink(), os.mkfifo(p)), "dev-zero": lambda p: (p.unlink(), p.symlink_to("/dev/zero")),
        "dangling-symlink": lambda p: (p.unlink(), p.symlink_to("/nonexistent")),
        "sparse-6GiB": lambda p: (p.unlink(), sparse(p, 6 << 30)),
    }
    out = []
    for file in (MANIFEST, INDEX, TAR):
        for kind, make in kinds.items():
            out.append(shard_case(seeds, "shards/not-regular", f"{file}-{kind}", f"{file}: {kind.replace('-', ' ')}",
                                  file, make))
    out.append(shard_case(seeds, "shards/not-regular", f"{TAR}-zero-tail-6GiB", f"{TAR} followed by 6 GiB of zeros",
                          TAR, lambda p: sparse(p, 6 << 30, keep=True),
                          "zero blocks after the end-of-archive marker are allowed in a tar; every record is intact"))
    return out


def converted(seeds):
    """Shards converted (as they are) from a damaged image: training must judge the image."""
    png, jpeg = (seeds.images / PNG_NAME).read_bytes(), (seeds.images / JPEG_NAME).read_bytes()
    sos = jpeg.find(b"\xff\xda")
    damaged = {"png-cut": (PNG_NAME, png[:60]), "png-20000x20000": (PNG_NAME, with_ihdr(png, width=20000, height=20000)),
               "jpeg-scan-flip": (JPEG_NAME, with_byte(jpeg, sos + 30, jpeg[sos + 30] ^ 0x10)),
               "jpeg-cut": (JPEG_NAME, jpeg[:sos + 20])}
    out = []
    for name, (file, data) in damaged.items():
        def prepare(where, file=file, data=data):
            images = copy_tree(seeds.images, where / "images")
            (images / file).write_bytes(data)
            paisoar("convert", "folder", "--root", images, "--out", where / "shards", "--quiet")
            return Prepared(train_shards(where / "shards", where), [str(where / "shards" / TAR)],
                            check=used_all((RECORDS,)))
        accept = "Pillow decodes the damaged image too" if pillow_decodes(data) else None
        out.append(Case("shards/converted-damage", name, f"shards converted from {file} damaged: {name}", prepare, accept))
    return out


def sparse(path, size, keep=False):
    with open(path, "r+b" if keep else "wb") as f:
        f.truncate(size)


def cases(seeds):
    return manifest_cases(seeds) + index_cases(seeds) + tar_cases(seeds) + not_regular(seeds) + converted(seeds)
