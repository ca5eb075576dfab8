"""paisoar.train: the C++ Trainer with a Python model on 2 launched ranks
(see ranks/trainer_python_model.py), and its refusals."""
import pytest
import torch

import paisoar


def test_a_python_model_trains_under_the_cpp_trainer_and_resumes(launch, tmp_path):
    out = launch("trainer_python_model.py", tmp_path / "run")
    assert out.count("TRAINER-PYTHON OK") == 2, out


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(TypeError, match="torch.nn.Module"):
        paisoar.train(model=lambda x: x)
    with pytest.raises(TypeError, match="paisoar.data set"):
        paisoar.train(model=torch.nn.Linear(2, 2), dataset=[1, 2, 3])
    with pytest.raises(ValueError, match="optimizer.nam"):
        paisoar.train(overrides={"optimizer.nam": "sgd", "run_dir": str(tmp_path)})
