#!/bin/sh
# Puts Debian's 6.1 kernel (the newest linux-image-6.1.0-N-amd64 the archive
# has) unpacked into the lab's cache: $XDG_CACHE_HOME/memdoctor-lab (or
# ~/.cache/memdoctor-lab)/kernel, with vmlinuz and the modules the guest
# loads. Prints that directory. Does nothing when it is already there.
# Needs apt-get and dpkg (Debian, Ubuntu); the package is only downloaded
# and unpacked, never installed.
set -eu
cache=${XDG_CACHE_HOME:-$HOME/.cache}/memdoctor-lab
dest=$cache/kernel
if [ -e "$dest/vmlinuz" ] && [ -e "$dest/version" ]; then
  echo "$dest"
  exit 0
fi
command -v apt-get >/dev/null 2>&1 || { echo "no apt-get: cannot fetch Debian's kernel" >&2; exit 1; }
pick() {
  apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' 2>/dev/null |
    cut -d' ' -f1 | sort -V | tail -1
}
pkg=$(pick)
if [ -z "$pkg" ] && [ "$(id -u)" = 0 ]; then
  apt-get update -qq >/dev/null 2>&1 || true
  pkg=$(pick)
fi
[ -n "$pkg" ] || { echo "no linux-image-6.1.0-*-amd64-unsigned package in the apt lists (apt-get update?)" >&2; exit 1; }
mkdir -p "$cache"
work=$(mktemp -d "$cache/fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download -q "$pkg" >/dev/null 2>&1) || { echo "apt-get download $pkg failed" >&2; exit 1; }
dpkg -x "$work"/*.deb "$work/root"
rel=$(ls "$work/root/lib/modules")
mkdir -p "$work/kernel/modules"
cp "$work/root/boot/vmlinuz-$rel" "$work/kernel/vmlinuz"
cp "$work/root/boot/config-$rel" "$work/kernel/config"
k=$work/root/lib/modules/$rel/kernel
# The order insmod needs (each after what it depends on).
for m in lib/crc16.ko fs/mbcache.ko fs/jbd2/jbd2.ko crypto/crc32c_generic.ko fs/ext4/ext4.ko \
  drivers/virtio/virtio.ko drivers/virtio/virtio_ring.ko drivers/virtio/virtio_pci_modern_dev.ko \
  drivers/virtio/virtio_pci_legacy_dev.ko drivers/virtio/virtio_pci.ko drivers/block/virtio_blk.ko; do
  cp "$k/$m" "$work/kernel/modules/"
  basename "$m" .ko >> "$work/kernel/modules/order"
done
echo "$pkg $rel" > "$work/kernel/version"
rm -rf "$dest"
mv "$work/kernel" "$dest"
echo "$dest"
