"""A DCGAN in the idiom of pytorch/examples' dcgan/main.py, at 16x16 and a few channels:
a ``Generator`` of ``ConvTranspose2d`` / ``BatchNorm2d`` / ``ReLU`` ending in ``Tanh``, a
``Discriminator`` of ``Conv2d`` / ``LeakyReLU(0.2, inplace=True)`` / ``BatchNorm2d`` ending
in ``Sigmoid``, ``weights_init`` applied with ``netG.apply``, ``nn.BCELoss``, two Adams with
``betas=(0.5, 0.999)``, ``label.fill_``, ``fake.detach()`` for the discriminator's step and
a fixed noise batch, over a ``DataLoader``.

The numbers all come from NumPy: the "real" images (smooth random blobs), the noise of
every step (instead of ``torch.randn``) and the initial weights, drawn like
``weights_init`` draws them (N(0, 0.02) convolutions, N(1, 0.02) BatchNorm scales, zero
BatchNorm shifts) and loaded with ``load_state_dict``.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
import torch.utils.data

from ._common import abs_sums, numpy_state_dict

nc = 1      # image channels
nz = 8      # size of the latent z vector
ngf = 8
ndf = 8


# custom weights initialization called on netG and netD
def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


def numpy_weights_init(name, shape, rng):
    """What ``weights_init`` draws, drawn by NumPy: 4-D weights are convolutions, 1-D
    weights BatchNorm scales, 1-D biases BatchNorm shifts."""
    if len(shape) == 4:
        return rng.normal(0.0, 0.02, shape)
    if name.endswith('weight'):
        return rng.normal(1.0, 0.02, shape)
    return np.zeros(shape)


class Generator(nn.Module):
    def __init__(self, ngpu):
        super(Generator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            # state size. (ngf*4) x 4 x 4
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # state size. (ngf*2) x 8 x 8
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh()
            # state size. (nc) x 16 x 16
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output


class Discriminator(nn.Module):
    def __init__(self, ngpu):
        super(Discriminator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            # input is (nc) x 16 x 16
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf) x 8 x 8
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*2) x 4 x 4
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)

        return output.view(-1, 1).squeeze(1)


def real_images(rng, n):
    """Blobs: a Gaussian bump at a random place with a random width, scaled to [-1, 1]."""
    yy, xx = np.mgrid[0:16, 0:16]
    cy, cx = rng.uniform(4, 12, (2, n, 1, 1))
    width = rng.uniform(2, 4, (n, 1, 1))
    img = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * width ** 2))
    return (img * 2 - 1)[:, None].astype(np.float32)


def run(niter=2, batch_size=8, n_images=24, seed=999):
    rng = np.random.default_rng(seed)
    device = torch.device("cpu")
    ngpu = 0
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(real_images(rng, n_images)),
                                             torch.zeros(n_images, dtype=torch.long))
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False)

    netG = Generator(ngpu).to(device)
    netG.apply(weights_init)
    netG.load_state_dict(numpy_state_dict(netG, seed, draw=numpy_weights_init))
    netD = Discriminator(ngpu).to(device)
    netD.apply(weights_init)
    netD.load_state_dict(numpy_state_dict(netD, seed + 1, draw=numpy_weights_init))

    criterion = nn.BCELoss()

    def noise(n):
        # the example: torch.randn(n, nz, 1, 1, device=device)
        return torch.from_numpy(rng.standard_normal((n, nz, 1, 1)).astype(np.float32)).to(device)

    fixed_noise = noise(batch_size)
    real_label = 1
    fake_label = 0

    # setup optimizer
    optimizerD = optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))

    log = {'errD': [], 'errG': [], 'D_x': [], 'D_G_z1': [], 'D_G_z2': []}
    for epoch in range(niter):
        for i, data in enumerate(dataloader, 0):
            ############################
            # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
            ###########################
            # train with real
            netD.zero_grad()
            real_cpu = data[0].to(device)
            batch_size = real_cpu.size(0)
            label = torch.full((batch_size,), real_label,
                               dtype=real_cpu.dtype, device=device)

            output = netD(real_cpu)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            # train with fake
            fake = netG(noise(batch_size))
            label.fill_(fake_label)
            output = netD(fake.detach())
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            optimizerD.step()

            ############################
            # (2) Update G network: maximize log(D(G(z)))
            ###########################
            netG.zero_grad()
            label.fill_(real_label)  # fake labels are real for generator cost
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            D_G_z2 = output.mean().item()
            optimizerG.step()

            for key, value in (('errD', errD.item()), ('errG', errG.item()), ('D_x', D_x),
                               ('D_G_z1', D_G_z1), ('D_G_z2', D_G_z2)):
                log[key].append(value)

    netG.eval()
    with torch.no_grad():
        fake = netG(fixed_noise).detach()
    log['fixed_fake_abs_sum'] = fake.abs().sum().item()
    log['fixed_fake_first'] = fake[0, 0, 8].tolist()
    log['G_sums'] = abs_sums(netG)
    log['D_sums'] = abs_sums(netD)
    log['D_running_mean_sum'] = netD.main[3].running_mean.abs().sum().item()
    log['D_running_var_sum'] = netD.main[3].running_var.sum().item()
    log['G_num_batches_tracked'] = int(netG.main[1].num_batches_tracked)
    return log
