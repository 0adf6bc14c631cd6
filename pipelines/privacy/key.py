"""The pseudonym key a data root's releases and tombstones use, and whether there is one before a
command does any work.

The key is the configured one: `TURNLAKE_PSEUDONYM_KEY`, else `[privacy] pseudonym_key_file`
(pseudonyms.py reads and checks it). With neither, a **local** data root gets a random key
generated once at `Layout.generated_pseudonym_key` (mode 600; never in a release), so that a new
user's first build works.

An S3 data root gets none unless the user asks (`[privacy] generate_key_on_s3 = true`): a key
generated there sits in plain beside the data, readable by whoever can read the bucket, and one
generated in this machine's cache would be lost with the machine, or differ between two machines
building the same root, and with it every pseudonym. So a command that needs the key on an S3
root without one (build, release, forget) stops before it does anything (`key_problem`), naming
the variable and the setting.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

from pipelines.config.settings import Settings
from pipelines.privacy.pseudonyms import KEY_ENV, PseudonymKeyError, key_from_env_or_file
from pipelines.storage.layout import Layout
from pipelines.storage.objects import ObjectRoot, get_bytes, put_if_absent
from pipelines.storage.uri import is_remote

MAKE_A_KEY = "openssl rand -hex 32 > ~/.turnlake_pseudonym_key"
# The message is kept as first written: the release part store's keys hold the fingerprint.
_KEY_FINGERPRINT_MESSAGE = b"turnlake release inputs: pseudonym key fingerprint"


def key_fingerprint(key: bytes) -> str:
    """Changes with the key, reveals nothing about it."""
    return hmac.new(key, _KEY_FINGERPRINT_MESSAGE, hashlib.sha256).hexdigest()


def no_remote_key(data_root: object) -> str:
    """What to do when a key is needed on the S3 data root `data_root` and none is configured."""
    return (
        f"no pseudonym key for the data root {data_root}: on an S3 data root turnlake does not "
        f"generate one (it would sit in plain beside the data). Set the environment variable "
        f"{KEY_ENV}, or [privacy] pseudonym_key_file in turnlake.toml to a local file holding "
        f"the key (at least 16 bytes; make one with `{MAKE_A_KEY}`), and keep it: the same key "
        "keeps pseudonyms stable from one release to the next. ([privacy] generate_key_on_s3 = "
        "true generates one in the bucket instead, readable by whoever can read the bucket.)"
    )


def is_configured(settings: Settings, environ: dict[str, str] | None = None) -> bool:
    """True when a key is configured (the variable set, or a key file named), usable or not: a
    configured key that cannot be used must never be silently replaced by a generated one."""
    env = os.environ if environ is None else environ
    return bool(env.get(KEY_ENV)) or bool(settings.privacy.pseudonym_key_file)


def configured_key(settings: Settings) -> bytes | None:
    """The configured key; None when none is configured. Raises `PseudonymKeyError` for a
    configured key that cannot be used (a key file missing or empty, a key under 16 bytes)."""
    if not is_configured(settings):
        return None
    base = settings.config_path.parent if settings.config_path else None
    return key_from_env_or_file(settings.privacy.pseudonym_key_file, base_dir=base)


def _generates_none(settings: Settings) -> bool:
    return is_remote(settings.data_root) and not settings.privacy.generate_key_on_s3


def key_problem(settings: Settings) -> str | None:
    """Why `pseudonym_key(settings)` would fail (None: it would not), without generating a key:
    asked before a build, a release or a forget does any work."""
    try:
        if configured_key(settings) is not None:
            return None
    except PseudonymKeyError as err:
        return str(err)
    return no_remote_key(settings.data_root) if _generates_none(settings) else None


def pseudonym_key(settings: Settings) -> tuple[bytes, str]:
    """The key and where it came from ("configured", or "generated (<path>)"): the configured
    key, else the one generated under the data root (made on first use; on S3 only when
    `[privacy] generate_key_on_s3`). Raises `PseudonymKeyError` for a configured key that
    cannot be used, and on an S3 data root that gets no generated key."""
    key = configured_key(settings)
    if key is not None:
        return key, "configured"
    if _generates_none(settings):
        raise PseudonymKeyError(no_remote_key(settings.data_root))
    path = Layout(settings.data_root).generated_pseudonym_key  # never in a release
    made = _generated_on_s3(path) if is_remote(path) else _generated_locally(path)
    return made, f"generated ({path})"


def _new_key() -> bytes:
    return os.urandom(32).hex().encode()


def _generated_locally(path: Path) -> bytes:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(_new_key())
    return path.read_text().strip().encode()


def _generated_on_s3(path: Path) -> bytes:
    """The key object at `path`, created if absent (put-if-absent: of two first writers, both
    read the one that won)."""
    root = ObjectRoot.parse(str(path.parent))
    put_if_absent(root, path.name, _new_key())
    return get_bytes(root, path.name).strip()
