"""``torch.hub``: downloading checkpoints into the hub cache (``$TORCH_HOME/hub``, default
``~/.cache/torch/hub``) and loading them with ``torch.load``. Loading code from GitHub
repositories (``torch.hub.load``) is not provided: it would run the repository's PyTorch
code."""

import hashlib
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
import urllib.request

_hub_dir = None
_HASH_PREFIX = re.compile(r"-([a-f0-9]*)\.")


def get_dir():
    """The hub cache folder: ``set_dir``'s, else ``$TORCH_HOME/hub``, else
    ``$XDG_CACHE_HOME/torch/hub`` or ``~/.cache/torch/hub``."""
    if _hub_dir is not None:
        return _hub_dir
    torch_home = os.environ.get("TORCH_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "torch")
    return os.path.join(os.path.expanduser(torch_home), "hub")


def set_dir(d):
    """Use folder ``d`` as the hub cache."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Download ``url`` to the path ``dst`` (through a temporary file, so ``dst`` is whole
    or absent); with ``hash_prefix``, RuntimeError unless the SHA-256 starts with it."""
    dst = os.path.expanduser(dst)
    folder = os.path.dirname(os.path.abspath(dst))
    sha256 = hashlib.sha256()
    with tempfile.NamedTemporaryFile(delete=False, dir=folder) as tmp:
        try:
            with urllib.request.urlopen(urllib.request.Request(
                    url, headers={"User-Agent": "tinytorch.hub"})) as response:
                total = 0
                while True:
                    chunk = response.read(1 << 16)
                    if not chunk:
                        break
                    tmp.write(chunk)
                    sha256.update(chunk)
                    total += len(chunk)
                    if progress:
                        sys.stderr.write(f"\rDownloading {url}: {total / 1e6:.1f} MB")
            if progress:
                sys.stderr.write("\n")
            tmp.close()
            if hash_prefix is not None and not sha256.hexdigest().startswith(hash_prefix):
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                                   f'"{sha256.hexdigest()}")')
            shutil.move(tmp.name, dst)
        finally:
            if os.path.exists(tmp.name):
                os.remove(tmp.name)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    """Download ``url`` into ``model_dir`` (default ``get_dir()/checkpoints``) unless a file
    of that name is already there, then ``torch.load`` it. With ``check_hash``, the file
    name's ``-<sha256 prefix>.`` part must match the download."""
    from . import load

    model_dir = model_dir or os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        if progress:
            sys.stderr.write(f'Downloading: "{url}" to {cached}\n')
        match = _HASH_PREFIX.search(filename) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None, progress)
    return load(cached, map_location=map_location, weights_only=weights_only)
