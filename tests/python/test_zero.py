"""paisoar.zero on 2 launched ranks against torch's DDP + AdamW (see
ranks/zero_equivalence.py), and its refusals."""
import pytest
import torch

from paisoar import zero


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_zero_matches_ddp_with_a_fraction_of_the_state(launch, stage):
    out = launch("zero_equivalence.py", stage)
    assert out.count(f"ZERO-EQUIVALENCE stage{stage} OK") == 2, out


def test_bad_stages_and_models_are_refused():
    with pytest.raises(ValueError, match="stage=4"):
        zero.ZeroOptimizer(torch.nn.Linear(2, 2), torch.optim.SGD, stage=4, lr=0.1)
    tied = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Linear(3, 3))
    tied[1].weight = tied[0].weight
    with pytest.raises(ValueError, match="shared"):
        zero.ZeroOptimizer(tied, torch.optim.SGD, stage=3, lr=0.1)
    with pytest.raises(ValueError, match="no parameter"):
        zero.ZeroOptimizer(torch.nn.ReLU(), torch.optim.SGD, lr=0.1)
