# Sourced by scripts/install-webgpu.sh and scripts/install-spirv-val.sh: a
# private apt configuration (its own sources, lists and cache under a
# project folder) for fetching files from another Debian suite without
# touching the machine's apt state or installing anything.
#
# private_apt DIR SUITE [deb-src]
#   writes DIR/sources.list for SUITE on the mirror this machine already
#   uses (deb.debian.org if none is found), with deb-src lines too when
#   asked, sets the array `apt_opts` to the apt options that use it, and
#   updates its lists.

private_apt() {
  local dir=$1 suite=$2 src=${3:-} uri key=/usr/share/keyrings/debian-archive-keyring.gpg
  uri=$(sed -n 's/^URIs: *\(http[^ ]*debian\/*\)$/\1/p' \
          /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1 || true)
  if [ -z "$uri" ]; then
    uri=$(sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\(http[^ ]*debian\/*\) bookworm .*/\2/p' \
            /etc/apt/sources.list 2>/dev/null | head -n1 || true)
  fi
  uri="${uri:-http://deb.debian.org/debian}"
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
  {
    echo "deb [signed-by=$key] $uri $suite main"
    if [ -n "$src" ]; then echo "deb-src [signed-by=$key] $uri $suite main"; fi
  } > "$dir/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$dir/sources.list"
            -o "Dir::Etc::SourceParts=/dev/null"
            -o "Dir::State::Lists=$dir/lists"
            -o "Dir::Cache=$dir/cache"
            -o "Debug::NoLocking=1"
            -o "APT::Sandbox::User=root")
  echo "[tang] apt: $uri $suite (private configuration in $dir)"
  apt-get -q "${apt_opts[@]}" update >/dev/null
}
