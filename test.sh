#!/usr/bin/env bash
# The test command of README.md: installs what the tests need where it can, runs the whole
# suite (every test binary, even after one fails) and prints what was skipped.
#
# As root (or with passwordless sudo) and apt-get, missing tools are installed from
# Debian's packages. Otherwise the suite runs anyway: each test that needs a missing tool
# prints `skipped: TOOL not installed` and the summary at the end lists them. With CI set
# (as .ci/run runs), a missing tool fails its tests instead (tests-support/need.rs).
# Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")"
# Debian keeps losetup, mkfs.ext4, mkswap and sshd in the sbin directories, which a
# non-root user's PATH often lacks: look there too (the tests do, tests-support/need.rs).
PATH="$PATH:/usr/sbin:/sbin"

# Tool -> Debian package, for everything a test or a benchmark calls.
need=()
command -v fio >/dev/null || need+=(fio)                                 # bench/ compares against it
command -v fio_jsonplus_clat2csv >/dev/null || need+=(fio)               # reads fio-json+ (tests/fio_json.rs)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)                     # device-safety and full-filesystem tests
{ command -v losetup && command -v mount && command -v setpriv && command -v fallocate; } >/dev/null || need+=(util-linux mount)
command -v mkswap >/dev/null || need+=(util-linux)
command -v ip >/dev/null || need+=(iproute2)                         # observer hosts: traffic on a veth pair
[ -x /usr/sbin/sshd ] || command -v sshd >/dev/null || need+=(openssh-server)   # loopback sshd fleets
{ command -v ssh && command -v ssh-keygen; } >/dev/null || need+=(openssh-client)
[ -x /usr/bin/chromium ] || need+=(chromium)                             # the HTML report, headless
command -v chromedriver >/dev/null || need+=(chromium-driver)            # iofleet serve in a browser (Selenium)
{ command -v prometheus && command -v promtool; } >/dev/null || need+=(prometheus)  # a real scrape of /metrics
command -v ansible-inventory >/dev/null || need+=(ansible-core)          # inventory parity
command -v mpirun >/dev/null || need+=(openmpi-bin)                      # agents that join, started by mpirun
{ command -v srun && command -v slurmctld && command -v slurmd; } >/dev/null || need+=(slurm-wlm)  # ... and by srun
{ command -v munged && command -v mungekey; } >/dev/null || need+=(munge) # Slurm's authentication
command -v pdsh >/dev/null || need+=(pdsh)                               # ... and by pdsh
command -v cpio >/dev/null || need+=(cpio)                               # worker VMs: the guest's initramfs read back
command -v objcopy >/dev/null || need+=(binutils)                        # ... the agent stripped for a guest
{ command -v virt-xml-validate && command -v xmllint; } >/dev/null || need+=(libvirt-clients libxml2-utils)  # ... domain XML against libvirt's schemas
ls /boot/vmlinuz-* >/dev/null 2>&1 || need+=(linux-image-cloud-amd64)    # ... a guest kernel with its virtio modules
{ command -v mdir && command -v mtype && command -v mcopy; } >/dev/null || need+=(mtools)  # ... a cloud image's seed read back
command -v fsck.fat >/dev/null || need+=(dosfstools)                     # ... and checked

if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo -n"; fi
  if command -v apt-get >/dev/null && { [ "$(id -u)" = 0 ] || [ -n "$sudo" ]; }; then
    echo "test.sh: installing ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "test.sh: cannot install ${need[*]} (needs root or passwordless sudo, and apt-get); tests that need them are skipped" >&2
  fi
  # The prometheus package may start its own daemons; the tests start their own servers
  # on free ports, so stop the packaged ones rather than leave them scraping.
  for svc in prometheus prometheus-node-exporter; do
    if [ -x "/etc/init.d/$svc" ] && pgrep -f "^/usr/bin/$svc( |$)" >/dev/null; then
      $sudo service "$svc" stop >/dev/null 2>&1 || $sudo "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
    fi
  done
fi

# QEMU for the worker-VM tests (software emulation). On Debian 12 this machine's
# qemu-utils comes from bookworm-backports, so QEMU must come from there too (bookworm's
# own qemu-system-x86 conflicts with it).
if ! command -v qemu-system-x86_64 >/dev/null && command -v apt-get >/dev/null \
   && [ "$(id -u)" = 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  if grep -q '^VERSION_CODENAME=bookworm' /etc/os-release 2>/dev/null; then
    if ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
      printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        > /etc/apt/sources.list.d/iofleet-backports.sources
    fi
    echo "test.sh: installing qemu-system-x86 (bookworm-backports)" >&2
    apt-get update -qq
    apt-get install -y -qq -t bookworm-backports qemu-system-x86 >/dev/null
  else
    echo "test.sh: installing qemu-system-x86" >&2
    apt-get install -y -qq qemu-system-x86 >/dev/null
  fi
fi
# libvirt's daemons for the worker-VM tests, which start and stop them themselves. Without
# recommends: the packaged default network (a bridge and dnsmasq) is not wanted. A remote
# hypervisor (qemu+ssh://, reached through a loopback sshd) needs the remote side of
# libvirt's ssh transport: virt-ssh-helper (package libvirt-daemon in Debian 12; libvirt
# falls back to `nc -U` without it).
if ! { command -v libvirtd && command -v virtlogd && command -v virt-ssh-helper; } >/dev/null \
   && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "test.sh: installing libvirt-daemon-system" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    libvirt-daemon-system libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients >/dev/null
fi
# A pool of existing LUNs for the worker-VM tests: Debian's user-space iSCSI target and
# libvirt's iscsi-direct pools (QEMU reaches the LUNs through libiscsi, qemu-block-extra,
# which comes with QEMU).
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  luns=()
  command -v tgtd >/dev/null || luns+=(tgt)
  [ -e /usr/lib/x86_64-linux-gnu/libvirt/storage-backend/libvirt_storage_backend_iscsi-direct.so ] \
    || luns+=(libvirt-daemon-driver-storage-iscsi-direct)
  if [ ${#luns[@]} -gt 0 ]; then
    echo "test.sh: installing ${luns[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${luns[@]}" >/dev/null
    # The package may start its own target on every address; the tests start theirs.
    if [ -x /etc/init.d/tgt ] && pgrep -x tgtd >/dev/null; then
      service tgt stop >/dev/null 2>&1 || /etc/init.d/tgt stop >/dev/null 2>&1 || true
    fi
  fi
fi

# Python tools from PyPI: the offline validator of Kubernetes manifests against the
# Kubernetes OpenAPI schemas (tests/kubernetes.rs), and fio-plot, a reader of fio's JSON
# that draws charts with matplotlib (tests/fio_plot.rs).
pypi_tool() { # COMMAND (the PyPI package of the same name)
  local tool="$1"
  if ! command -v "$tool" >/dev/null && command -v python3 >/dev/null; then
    echo "test.sh: installing $tool (PyPI)" >&2
    python3 -m pip install --quiet --disable-pip-version-check "$tool" >/dev/null 2>&1 \
      || python3 -m pip install --quiet --user --disable-pip-version-check "$tool" >/dev/null 2>&1 \
      || echo "test.sh: cannot install $tool; tests that need it are skipped" >&2
    hash -r
    # pip --user puts scripts in ~/.local/bin, which a fresh PATH may lack.
    if ! command -v "$tool" >/dev/null && [ -x "$HOME/.local/bin/$tool" ]; then
      export PATH="$HOME/.local/bin:$PATH"
    fi
  fi
}
pypi_tool kubernetes-validate
pypi_tool fio-plot

# Selenium from PyPI drives Debian's chromium through its chromedriver (tests/ui.rs).
if command -v python3 >/dev/null && ! python3 -c "import selenium" 2>/dev/null; then
  echo "test.sh: installing selenium (PyPI)" >&2
  python3 -m pip install --quiet --disable-pip-version-check selenium >/dev/null 2>&1 \
    || python3 -m pip install --quiet --user --disable-pip-version-check selenium >/dev/null 2>&1 \
    || echo "test.sh: cannot install selenium; the browser tests are skipped" >&2
fi

IOFLEET_SKIP_LOG="$(mktemp -t iofleet-skips.XXXXXX)"
export IOFLEET_SKIP_LOG
trap 'rm -f "$IOFLEET_SKIP_LOG"' EXIT

status=0
cargo test --workspace --no-fail-fast "$@" || status=$?

# The skip log has one line per skip: what was missing, the test, and "ci-cannot" for
# what the CI machine cannot provide (need::CI_CANNOT_PROVIDE) or "missing" otherwise.
summary() { # KIND TITLE
  awk -F'\t' -v kind="$1" '$3 == kind' "$IOFLEET_SKIP_LOG" | sort | awk -F'\t' -v title="$2" '
    NR == 1 { printf "%s:\n", title }
    $1 != last { if (last != "") printf "\n"; printf "  %s:", $1; last = $1; n = 0 }
    { printf "%s %s", (n++ ? "," : ""), $2 }
    END { if (NR) printf "\n" }'
}
echo
if [ -s "$IOFLEET_SKIP_LOG" ]; then
  summary missing "skipped tests, by what they need ($(awk -F'\t' '$3 == "missing"' "$IOFLEET_SKIP_LOG" | wc -l))"
  summary ci-cannot "skipped because no CI machine can provide what they need ($(awk -F'\t' '$3 == "ci-cannot"' "$IOFLEET_SKIP_LOG" | wc -l); tests-support/need.rs says why)"
else
  echo "no test was skipped"
fi
# Under CI a skip of anything a CI machine can provide is a failure (need.rs panics first;
# this catches a skip that went around it).
if [ -n "${CI:-}" ] && [ "${CI}" != 0 ] && [ "${CI}" != false ] \
  && awk -F'\t' '$3 != "ci-cannot"' "$IOFLEET_SKIP_LOG" | grep -q .; then
  echo "test.sh: CI is set and tests were skipped for what CI provides" >&2
  status=1
fi
exit "$status"
