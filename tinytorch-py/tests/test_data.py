"""TensorDataset, DataLoader (batching, shuffling from a generator, drop_last, collate),
random_split, Subset."""

import tinytorch as torch
from tinytorch.utils.data import DataLoader, Dataset, Subset, TensorDataset, random_split


def test_batches_in_order_and_drop_last():
    x, y = torch.arange(10).reshape(10, 1).float(), torch.arange(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [len(b[1]) for b in batches] == [4, 4, 2]
    assert batches[1][1].tolist() == [4, 5, 6, 7] and batches[1][0].shape == (4, 1)
    assert len(DataLoader(TensorDataset(x, y), batch_size=4, drop_last=True)) == 2


def test_shuffle_is_a_permutation_and_follows_the_generator():
    ds = TensorDataset(torch.arange(20))
    def order(seed):
        g = torch.Generator().manual_seed(seed)
        return [v for (b,) in DataLoader(ds, batch_size=6, shuffle=True, generator=g)
                for v in b.tolist()]
    a, b, c = order(1), order(1), order(2)
    assert sorted(a) == list(range(20)) and a == b and a != c


class Squares(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": torch.tensor([float(i)]), "y": i * i}


def test_default_collate_of_dicts_and_numbers_and_custom_collate():
    batch = next(iter(DataLoader(Squares(), batch_size=3)))
    assert batch["x"].shape == (3, 1) and batch["y"].tolist() == [0, 1, 4]
    batch = next(iter(DataLoader(Squares(), batch_size=2, collate_fn=lambda b: len(b))))
    assert batch == 2


def test_random_split_and_subset():
    ds = TensorDataset(torch.arange(10))
    a, b = random_split(ds, [7, 3], generator=torch.Generator().manual_seed(0))
    got = sorted([a[i][0].item() for i in range(7)] + [b[i][0].item() for i in range(3)])
    assert got == list(range(10))
    assert Subset(ds, [4, 2])[1][0].item() == 2
    a, b = random_split(ds, [0.5, 0.5])
    assert len(a) == len(b) == 5
