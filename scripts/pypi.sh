# Sourced by the setup scripts: pinned downloads from PyPI, checked against their SHA-256.

# pip_get name==version sha256 dir [pip download options...]: downloads one file into dir (empty
# before), checks its hash and prints its path.
pip_get() {
  local spec="$1" sha="$2" dir="$3"
  shift 3
  python3 -m pip download -q --no-deps "$@" -d "$dir" "$spec"
  local f
  f="$(ls "$dir"/* | head -n1)"
  echo "$sha  $f" | sha256sum -c --quiet - || { echo "setup: $spec: checksum mismatch" >&2; exit 1; }
  echo "$f"
}

# sdist_get name==version sha256 dir: the same for a source package.
sdist_get() { pip_get "$1" "$2" "$3" --no-binary "${1%%==*}"; }
