#!/bin/sh
# A second guest kernel for the kernel matrix: Debian's newest linux-image-SERIES.*+deb12-amd64 (6.12 from
# bookworm-security), for what Debian's 6.1 lacks: kprobe_multi (6.1 is built without CONFIG_FPROBE).
#
#   guest-kernel.sh fetch SERIES        download the package (apt-get download: nothing is installed, this
#                                       machine's /boot and /lib/modules stay as they are) and unpack it into
#                                       $CACHE/KVER/: vmlinux (uncompressed, so qemu boots it directly) and mod/
#                                       (the 9p modules the guest's init loads, decompressed); prints KVER
#   guest-kernel.sh stage SERIES WORK   after fetch: put vmlinux-KVER and initrd-KVER.gz into WORK, where
#                                       ../shared/tools/kernel-matrix/run-guest.sh takes them instead of building
#                                       its own from /boot; prints KVER (run run-guest.sh with KVER=that)
# CACHE: $BPFSCOPE_KERNEL_CACHE, default /var/cache/bpfscope/kernels. Exit 2 with a sentence when not fetched.
set -eu
CMD=${1:?usage: guest-kernel.sh fetch|stage SERIES [WORK]}
SERIES=${2:?usage: guest-kernel.sh fetch|stage SERIES [WORK]}
CACHE=${BPFSCOPE_KERNEL_CACHE:-/var/cache/bpfscope/kernels}
HERE=$(cd "$(dirname "$0")" && pwd)
INIT=$HERE/../../../shared/tools/kernel-matrix/init
MODULES="netfs fscache 9pnet 9pnet_virtio 9p"

cached_kver() { # the newest unpacked KVER of SERIES, or nothing
  ls "$CACHE" 2>/dev/null | grep -E "^${SERIES}\.[0-9]+\+deb12-amd64$" | sort -V | tail -1 || true
}

case "$CMD" in
fetch)
  PKG=$(apt-cache search --names-only "^linux-image-${SERIES}\.[0-9]+\+deb12-amd64\$" | cut -d' ' -f1 | sort -V | tail -1)
  [ -n "$PKG" ] || { echo "guest-kernel: no linux-image-${SERIES}.*+deb12-amd64 package (apt-get update?)" >&2; exit 2; }
  KVER=${PKG#linux-image-}
  if [ ! -f "$CACHE/$KVER/vmlinux" ]; then
    T=$(mktemp -d)
    (cd "$T" && apt-get download -q "$PKG" >/dev/null 2>&1 && dpkg-deb -x ./*.deb x)
    mkdir -p "$CACHE/$KVER/mod"
    # vmlinuz: a bzImage whose payload is zstd (Debian 6.12) or xz; zstd stops at the payload's end with a complaint
    python3 - "$T/x/boot/vmlinuz-$KVER" "$CACHE/$KVER/vmlinux.tmp" <<'PY'
import lzma, subprocess, sys
d = open(sys.argv[1], 'rb').read()
i = d.find(b'\x28\xb5\x2f\xfd')
if i >= 0:
    out = subprocess.run(['zstd', '-d', '-c', '-q'], input=d[i:], capture_output=True).stdout
else:
    out = lzma.LZMADecompressor(lzma.FORMAT_XZ).decompress(d[d.find(b'\xfd7zXZ\x00'):])
if out[:4] != b'\x7fELF':
    sys.exit('guest-kernel: could not decompress ' + sys.argv[1])
open(sys.argv[2], 'wb').write(out)
PY
    for m in $MODULES; do
      f=$(find "$T/x/lib/modules" -name "$m.ko*" | head -1)
      [ -n "$f" ] || continue # built in (or merged into netfs: fscache on 6.12)
      case "$f" in *.xz) xz -dc "$f" >"$CACHE/$KVER/mod/$m.ko" ;; *.zst) zstd -dcq "$f" >"$CACHE/$KVER/mod/$m.ko" ;; *) cp "$f" "$CACHE/$KVER/mod/$m.ko" ;; esac
    done
    mv "$CACHE/$KVER/vmlinux.tmp" "$CACHE/$KVER/vmlinux"
    rm -rf "$T"
  fi
  echo "$KVER"
  ;;
stage)
  W=${3:?usage: guest-kernel.sh stage SERIES WORK}
  KVER=$(cached_kver)
  [ -n "$KVER" ] || { echo "guest-kernel: no ${SERIES} kernel in $CACHE (run test/matrix/guest-kernel.sh fetch ${SERIES})" >&2; exit 2; }
  ln -sf "$CACHE/$KVER/vmlinux" "$W/vmlinux-$KVER"
  # the same initrd run-guest.sh builds (busybox, the 9p modules, kernel-matrix's init), from the cached modules
  D=$(mktemp -d)
  mkdir -p "$D/bin" "$D/proc" "$D/sys" "$D/dev" "$D/host" "$D/mod"
  cp /bin/busybox "$D/bin/busybox"
  cp "$CACHE/$KVER/mod/"*.ko "$D/mod/"
  sed "s|@WORK@|$W|g" "$INIT" >"$D/init"
  chmod +x "$D/init"
  (cd "$D" && find . | cpio -o -H newc --quiet | gzip -1) >"$W/initrd-$KVER.gz"
  rm -rf "$D"
  echo "$KVER"
  ;;
*)
  echo "guest-kernel: unknown command $CMD" >&2
  exit 2
  ;;
esac
