"""paisoar.train: the C++ Trainer with a Python model on 2 launched ranks
(see ranks/trainer_python_model.py), and its refusals."""
import pytest
import torch

import paisoar


def test_a_python_model_trains_under_the_cpp_trainer_and_resumes(launch, tmp_path):
    out = launch("trainer_python_model.py", tmp_path / "run")
    assert out.count("TRAINER-PYTHON OK") == 2, out


def separable(n, seed):
    """n 1x8x8 images whose class is the sign of their mean."""
    x = torch.randn(n, 1, 8, 8, generator=torch.Generator().manual_seed(seed))
    return torch.utils.data.TensorDataset(x, (x.mean(dim=(1, 2, 3)) > 0).long())


def test_a_torch_dataset_feeds_the_trainer(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 2))
    trainer = paisoar.Trainer(model=model, dataset=separable(1024, 0), eval_dataset=separable(256, 1),
                              overrides={"run_dir": str(tmp_path), "train.epochs": 3, "train.batch_size": 32,
                                         "optimizer.lr": 0.1, "profiler.memory": False})
    result = trainer.fit()
    assert result["steps"] == 3 * 1024 // 32, result
    assert result["accuracy"] > 90, result


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(TypeError, match="torch.nn.Module"):
        paisoar.train(model=lambda x: x)
    with pytest.raises(TypeError, match="map-style torch Dataset"):
        paisoar.train(model=torch.nn.Linear(2, 2), dataset=42)
    with pytest.raises(paisoar.DataError, match=r"list\[\d+\] is not a \(tensor, label\) pair"):
        paisoar.train(model=torch.nn.Linear(2, 2), dataset=[1, 2, 3],
                      overrides={"run_dir": str(tmp_path / "bad"), "train.batch_size": 1})
    with pytest.raises(ValueError, match=r"zero.stage 3.*paisoar.zero.ZeroOptimizer"):
        paisoar.train(model=torch.nn.Linear(2, 2), overrides={"zero.stage": 3, "run_dir": str(tmp_path / "z3")})
    with pytest.raises(ValueError, match="optimizer.nam"):
        paisoar.train(overrides={"optimizer.nam": "sgd", "run_dir": str(tmp_path)})
