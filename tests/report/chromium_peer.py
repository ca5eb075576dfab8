"""Opens a report page in headless Chromium (Debian's `chromium`) and says
what a person would see: the console messages the page caused and pixel
statistics of its screenshot, as JSON on stdout.

    chromium_peer.py PAGE.html SHOT.png
    chromium_peer.py --png FILE.png      (pixel statistics of a PNG only)

A negative control runs first: a page with a script error must show up as a
console message, or this peer fails (so a silent Chromium cannot pass a test).
Exit status 1 with a message on stderr when Chromium is missing or fails.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import torch
import torchvision.io

CONSOLE = re.compile(r":CONSOLE(?::\d+)?\]\s*(.*)")


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("chromium_peer: no chromium on PATH; scripts/setup.sh installs Debian's chromium")


def open_page(url, shot, width=1400, height=3200):
    """Console messages of the page at `url`; its screenshot goes to `shot`."""
    with tempfile.TemporaryDirectory() as profile:
        cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0", "--hide-scrollbars",
               "--screenshot=" + shot, "--window-size=%d,%d" % (width, height), url]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if run.returncode != 0 or not os.path.exists(shot):
        sys.exit("chromium_peer: %s exited %d:\n%s" % (cmd[0], run.returncode, run.stderr[-3000:]))
    return [m.group(1) for m in map(CONSOLE.search, run.stderr.splitlines()) if m]


def pixels(path):
    image = torchvision.io.decode_image(torchvision.io.read_file(path), mode=torchvision.io.ImageReadMode.RGB)
    flat = image.permute(1, 2, 0).reshape(-1, 3).to(torch.int32)
    background = torch.mode(flat[:, 0] * 65536 + flat[:, 1] * 256 + flat[:, 2]).values.item()
    key = flat[:, 0] * 65536 + flat[:, 1] * 256 + flat[:, 2]
    return {
        "width": image.shape[2],
        "height": image.shape[1],
        "background": [background >> 16, (background >> 8) & 255, background & 255],
        "not_background": (key != background).float().mean().item(),
        "colours": torch.unique(key).numel(),
    }


def main():
    if sys.argv[1] == "--png":
        print(json.dumps(pixels(sys.argv[2])))
        return
    page, shot = os.path.abspath(sys.argv[1]), sys.argv[2]
    with tempfile.TemporaryDirectory() as scratch:
        broken = os.path.join(scratch, "broken.html")
        with open(broken, "w") as f:
            f.write("<!DOCTYPE html><html><body><script>no_such_function();</script></body></html>")
        if not open_page("file://" + broken, os.path.join(scratch, "broken.png"), 400, 300):
            sys.exit("chromium_peer: the negative control's script error did not reach the console log")
    console = open_page("file://" + page, shot)
    result = pixels(shot)
    result["console"] = console
    print(json.dumps(result))


if __name__ == "__main__":
    main()
