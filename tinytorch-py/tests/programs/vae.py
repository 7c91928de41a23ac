"""A variational autoencoder in the idiom of pytorch/examples' vae/main.py: fully connected
``encode`` to ``mu`` and ``logvar``, ``reparameterize``, ``decode`` with a sigmoid,
``loss_function`` = ``F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')``
plus the KL divergence, Adam (lr 1e-3), ``train`` and ``test`` loops over ``DataLoader``s,
and sampling from the prior under ``torch.no_grad()``. Hidden sizes are small (784 -> 32 ->
4). ``eps`` comes from NumPy instead of ``torch.randn_like(std)``, and so do the "images"
(random strokes on 28x28) and the initial weights, so both libraries see the same numbers.
"""

import numpy as np
import torch
import torch.utils.data
from torch import nn, optim
from torch.nn import functional as F

from ._common import abs_sums, numpy_state_dict


class VAE(nn.Module):
    def __init__(self, noise):
        super(VAE, self).__init__()

        self.fc1 = nn.Linear(784, 32)
        self.fc21 = nn.Linear(32, 4)
        self.fc22 = nn.Linear(32, 4)
        self.fc3 = nn.Linear(4, 32)
        self.fc4 = nn.Linear(32, 784)
        self.noise = noise

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = self.noise(std)  # the example: torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


# Reconstruction + KL divergence losses summed over all elements and batch
def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')

    # see Appendix B from VAE paper:
    # Kingma and Welling. Auto-Encoding Variational Bayes. ICLR, 2014
    # 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())

    return BCE + KLD


def strokes(rng, n):
    """28x28 images in [0, 1]: a few bright horizontal or vertical bars, slightly blurred."""
    img = np.zeros((n, 1, 28, 28))
    for k in range(n):
        for _ in range(3):
            a, b = rng.integers(2, 26, 2)
            if rng.random() < 0.5:
                img[k, 0, a, max(b - 8, 0):b + 8] = 1.0
            else:
                img[k, 0, max(a - 8, 0):a + 8, b] = 1.0
    img = 0.6 * img + 0.1 * (np.roll(img, 1, 2) + np.roll(img, -1, 2) + np.roll(img, 1, 3)
                             + np.roll(img, -1, 3))
    return np.clip(img, 0.0, 1.0).astype(np.float32)


def run(epochs=3, batch_size=8, seed=1):
    rng = np.random.default_rng(seed)
    device = torch.device("cpu")
    train_x, test_x = strokes(rng, 24), strokes(rng, 8)
    train_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(train_x), torch.zeros(24)),
        batch_size=batch_size, shuffle=False)
    test_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(test_x), torch.zeros(8)),
        batch_size=batch_size, shuffle=False)

    def noise(like):
        return torch.from_numpy(rng.standard_normal(tuple(like.shape)).astype(np.float32))

    model = VAE(noise).to(device)
    model.load_state_dict(numpy_state_dict(model, seed))
    optimizer = optim.Adam(model.parameters(), lr=1e-3)

    batch_losses, train_losses, test_losses = [], [], []

    def train(epoch):
        model.train()
        train_loss = 0
        for batch_idx, (data, _) in enumerate(train_loader):
            data = data.to(device)
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data)
            loss = loss_function(recon_batch, data, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
            batch_losses.append(loss.item() / len(data))
        train_losses.append(train_loss / len(train_loader.dataset))

    def test(epoch):
        model.eval()
        test_loss = 0
        with torch.no_grad():
            for i, (data, _) in enumerate(test_loader):
                data = data.to(device)
                recon_batch, mu, logvar = model(data)
                test_loss += loss_function(recon_batch, data, mu, logvar).item()
        test_loss /= len(test_loader.dataset)
        test_losses.append(test_loss)

    for epoch in range(1, epochs + 1):
        train(epoch)
        test(epoch)
        with torch.no_grad():
            sample = torch.from_numpy(rng.standard_normal((4, 4)).astype(np.float32))
            sample = model.decode(sample).cpu()
    return {
        'batch_losses': batch_losses,
        'train_losses': train_losses,
        'test_losses': test_losses,
        'sample_sum': sample.sum().item(),
        'sample_first_row': sample.view(4, 1, 28, 28)[0, 0, 14].tolist(),
        'sums': abs_sums(model),
    }
