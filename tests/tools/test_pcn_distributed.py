"""train-pcn's data-parallel plumbing that runs without a GPU: which device each torchrun rank
takes (the 2-process gloo run itself is in tests/cli/test_train_pcn.py)."""

import torch

from cortexkit.tools.pcn import distributed


def test_each_rank_takes_its_own_gpu_under_torchrun(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert distributed.local_device(torch.device("cuda")) == torch.device("cuda", 1)
    # an explicit index, the CPU and no device are left as asked
    assert distributed.local_device(torch.device("cuda", 0)) == torch.device("cuda", 0)
    assert distributed.local_device(torch.device("cpu")) == torch.device("cpu")
    assert distributed.local_device(None) is None
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert distributed.local_device(torch.device("cuda")) == torch.device("cuda")


def test_sum_tensor_without_a_group_is_the_tensor():
    stats = torch.arange(4.0, dtype=torch.float64)
    assert distributed.sum_tensor(stats) is stats
