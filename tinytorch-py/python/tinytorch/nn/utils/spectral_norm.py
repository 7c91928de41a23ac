"""``nn.utils.spectral_norm``/``remove_spectral_norm``: the weight divided by its largest
singular value (Miyato et al., 2018), estimated by power iteration: the trained parameter
is ``<name>_orig``, the singular vectors are the buffers ``<name>_u``/``<name>_v``
(PyTorch's names), and each forward in training mode runs ``n_power_iterations`` steps
before recomputing ``<name>``."""

from ..._grad_mode import no_grad
from ..parameter import Parameter
from .weight_norm import _attach, _attached_handle, _detach


def _normalize(t, eps):
    return t / t.norm().clamp_min(eps)


class _SpectralNorm:
    """The forward pre-hook that recomputes the weight."""

    def __init__(self, name, n_power_iterations, dim, eps):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = (name, n_power_iterations,
                                                                  dim, eps)

    def matrix(self, weight):
        """The weight as a matrix with ``dim`` as its rows."""
        if self.dim:
            weight = weight.transpose(0, self.dim)
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module, power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.matrix(weight)
        if power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(_normalize(mat.t() @ u, self.eps))
                    u.copy_(_normalize(mat @ v, self.eps))
        u, v = u.clone(), v.clone()
        sigma = u.dot(mat @ v)
        return weight / sigma

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute_weight(module, module.training))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm before every forward; ``dim`` (the
    output dim, default 0, 1 for transposed convolutions) becomes the matrix's rows."""
    from ... import _tinytorch as _C
    from ..composed import ConvTranspose1d
    from ..layers import ConvTranspose2d

    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, _SpectralNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter "
                               f"{name}")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d)) else 0
    fn = _SpectralNorm(name, n_power_iterations, dim, eps)
    weight = getattr(module, name)
    mat = fn.matrix(weight.detach())
    h, w = mat.shape
    del module._parameters[name]
    module.register_parameter(name + "_orig", Parameter(weight.detach()))
    module.register_buffer(name + "_u", _normalize(_C.randn(h, dtype=weight.dtype), eps))
    module.register_buffer(name + "_v", _normalize(_C.randn(w, dtype=weight.dtype), eps))
    return _attach(module, name, "spectral_norm", fn, weight.detach())


def remove_spectral_norm(module, name="weight"):
    """Undo ``spectral_norm``: ``module.<name>`` is a plain Parameter again (the normalised
    weight); returns ``module``."""
    handle = _attached_handle(module, name, "spectral_norm")
    fn = next(h for h in module._forward_pre_hooks.values()
              if isinstance(h, _SpectralNorm) and h.name == name)
    weight = fn.compute_weight(module, False).detach()
    return _detach(module, name, "spectral_norm", handle, weight, parameters=(name + "_orig",),
                   buffers=(name + "_u", name + "_v"))
