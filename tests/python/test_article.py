"""The article's own Python snippets (sections 3.2, 3.4 and 4.1), pasted as
written except `.cuda()` and 'nccl' on a machine without a GPU, run under
`paisoar launch` on 2 ranks; plus the package's entry points and its
refusal of a torch it was not built for."""
import os
import subprocess
import sys


def test_section_3_2_mixed_precision(launch):
    out = launch("article_3_2_amp.py")
    assert out.count("ARTICLE 3.2 OK") == 2, out


def test_section_4_1_ddp_with_the_amp_loop(launch, tmp_path):
    out = launch("article_4_1_ddp.py", tmp_path / "checkpoint.pth")
    assert out.count("ARTICLE 4.1 OK") == 2 and "Epoch 5, loss" in out, out
    assert (tmp_path / "checkpoint.pth").exists()


def test_section_3_4_gradient_accumulation_under_ddp(launch, tmp_path):
    out = launch("article_4_1_ddp.py", tmp_path / "checkpoint.pth", "accumulate")
    assert out.count("ARTICLE 3.4 OK") == 2, out


def test_python_m_paisoar_runs_the_cli():
    done = subprocess.run([sys.executable, "-m", "paisoar", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "launch" in done.stdout, done.stdout + done.stderr


def test_a_torch_it_was_not_built_for_is_refused_with_what_to_do():
    code = "import torch; torch.__version__ = '2.0.0'; import paisoar"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert done.returncode != 0
    assert "paisoar was built against torch" in done.stderr and "pip install --force-reinstall" in done.stderr, \
        done.stderr
