#!/bin/sh
# Builds memdoctor_VERSION_ARCH.deb with dpkg-deb alone (no debhelper):
# the static binary, the preload library, man pages and completions
# generated from the command tree, the systemd unit (not enabled), the
# example settings in /etc/memdoctor, and the docs.
#
# usage: scripts/build-deb.sh [OUTDIR]        (default: .)
# Environment: DEB_VERSION (default from git), MAINTAINER, GO, CC,
# SOURCE_DATE_EPOCH (default: the commit's time; fixes every date and mtime).
set -eu
cd "$(dirname "$0")/.."
out=${1:-.}
GO=${GO:-go}
CC=${CC:-cc}
for t in dpkg-deb dpkg gzip objdump strip; do
	command -v "$t" >/dev/null || { echo "build-deb: $t not found (apt-get install dpkg binutils gzip)" >&2; exit 1; }
done
arch=$(dpkg --print-architecture)
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
describe=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
: "${SOURCE_DATE_EPOCH:=$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
export SOURCE_DATE_EPOCH
if [ -z "${DEB_VERSION:-}" ]; then
	# A tag v1.2.3 gives 1.2.3; otherwise 0.0~git<commit time>.<commit>, which
	# sorts by commit time. A work tree with changes adds +dirty.
	case $describe in
	v[0-9]*) DEB_VERSION=$(echo "${describe#v}" | sed 's/-\([0-9]*\)-g/+\1.g/; s/-dirty$/+dirty/') ;;
	*) DEB_VERSION=0.0~git$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d%H%M%S).$(echo "$commit" | cut -c1-12)
	   case $describe in *-dirty) DEB_VERSION=$DEB_VERSION+dirty ;; esac ;;
	esac
fi
MAINTAINER=${MAINTAINER:-memdoctor maintainers <maintainers@memdoctor.invalid>}
builddate=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
libdir=/usr/lib/memdoctor

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
umask 022
mkdir -p "$root/DEBIAN" "$root/usr/bin" "$root$libdir" "$root/usr/share/man/man1" \
	"$root/usr/share/doc/memdoctor" "$root/lib/systemd/system" "$root/etc/memdoctor" \
	"$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
	"$root/usr/share/fish/vendor_completions.d"

# The binary: static, stamped, and told where its preload library is.
ldflags="-s -w -X main.version=$DEB_VERSION -X main.commit=$commit -X main.buildDate=$builddate \
-X github.com/memdoctor/memdoctor/preload.PackagedLib=$libdir/libmemdoctor_preload.so"
CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$root/usr/bin/memdoctor" ./cmd/memdoctor
# The same command tree, once more with the generator, for man pages and completions.
CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false -tags gendocs -ldflags "$ldflags" -o "$work/memdoctor-gendocs" ./cmd/memdoctor
"$work/memdoctor-gendocs" gendocs --man "$work/man" --completions "$work/completions"
for m in "$work"/man/*.1; do gzip -9n <"$m" >"$root/usr/share/man/man1/$(basename "$m").gz"; done
install -m 644 "$work/completions/memdoctor.bash" "$root/usr/share/bash-completion/completions/memdoctor"
install -m 644 "$work/completions/_memdoctor" "$root/usr/share/zsh/vendor-completions/_memdoctor"
install -m 644 "$work/completions/memdoctor.fish" "$root/usr/share/fish/vendor_completions.d/memdoctor.fish"

# The preload library: the Makefile's flags on top of Debian's hardening
# flags for this architecture (dpkg-buildflags; a portable subset without
# it). They come from the environment: the Makefile appends its own.
if command -v dpkg-buildflags >/dev/null; then
	export DEB_BUILD_MAINT_OPTIONS=hardening=+all
	pcflags="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
	pldflags=$(dpkg-buildflags --get LDFLAGS)
else
	pcflags="-g -O2 -fstack-protector-strong -D_FORTIFY_SOURCE=2"
	pldflags=""
fi
cp -r preload "$work/preload"
make -s -C "$work/preload" clean
(cd "$work/preload" && CFLAGS="$pcflags" LDFLAGS="$pldflags" make -s CC="$CC")
install -m 644 "$work/preload/libmemdoctor_preload.so" "$root$libdir/"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root$libdir/libmemdoctor_preload.so"
glibc=$(objdump -T "$root$libdir/libmemdoctor_preload.so" | sed -n 's/.*GLIBC_\([0-9.]*\).*/\1/p' | sort -uV | tail -1)

# systemd unit (installed, not enabled), settings, maintainer script.
install -m 644 packaging/deb/memdoctor-record.service "$root/lib/systemd/system/"
install -m 644 packaging/deb/record.conf "$root/etc/memdoctor/record.conf"
install -m 755 packaging/deb/postrm "$root/DEBIAN/postrm"
echo /etc/memdoctor/record.conf >"$root/DEBIAN/conffiles"
if [ -s packaging/deb/lintian-overrides ]; then
	mkdir -p "$root/usr/share/lintian/overrides"
	install -m 644 packaging/deb/lintian-overrides "$root/usr/share/lintian/overrides/memdoctor"
fi

# Docs: README and the pages under docs/ it links to (Markdown gzipped as
# Debian's policy asks, pictures as they are), copyright (with the Go
# modules compiled in), changelog.
doc=$root/usr/share/doc/memdoctor
gzip -9n <README.md >"$doc/README.md.gz"
(cd docs && find . -type f \( -name '*.md' -o -name '*.png' \) | LC_ALL=C sort) | while read -r f; do
	mkdir -p "$doc/docs/$(dirname "$f")"
	case $f in
	*.md) gzip -9n <"docs/$f" >"$doc/docs/$f.gz" ;;
	*) install -m 644 "docs/$f" "$doc/docs/$f" ;;
	esac
done
modules=$("$GO" version -m "$root/usr/bin/memdoctor" | awk '$1 == "dep" { printf " %s %s\n", $2, $3 }')
awk -v m="$modules" '{ if ($0 == "@MODULES@") print m; else print }' packaging/deb/copyright.in >"$doc/copyright"
chmod 644 "$doc/copyright"
{
	printf 'memdoctor (%s) unstable; urgency=medium\n\n' "$DEB_VERSION"
	printf '  * Built from commit %s (%s).\n' "$commit" "$describe"
	# The commit names the changes; commit subjects are not copied here
	# (lintian spell-checks a changelog, and a subject is no release note).
	printf '\n -- %s  %s\n' "$MAINTAINER" "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$doc/changelog.gz"

size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CONTROL
Package: memdoctor
Version: $DEB_VERSION
Architecture: $arch
Maintainer: $MAINTAINER
Installed-Size: $size
Depends: libc6 (>= $glibc)
Section: admin
Priority: optional
Homepage: https://github.com/memdoctor/memdoctor
Description: find where a Linux server's memory went, and why
 memdoctor reads the kernel's own memory accounting (meminfo, vmstat,
 zoneinfo, slabinfo, cgroups v1 and v2 including dying ones, PSI, sysctls,
 per-process USS/PSS/RSS), names the mechanism that wastes memory, shows
 the numbers that prove it and the commands that fix it. It never changes
 the host on its own.
 .
 The package holds the memdoctor command, a recorder service (installed
 disabled: systemctl enable --now memdoctor-record) that keeps 30 days of
 samples and serves Prometheus metrics on 127.0.0.1:9105, and the
 LD_PRELOAD library that returns glibc malloc's free memory to the kernel
 (memdoctor preload).
CONTROL
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort | xargs md5sum) >"$root/DEBIAN/md5sums"
find "$root" -depth -newermt "@$SOURCE_DATE_EPOCH" -exec touch --no-dereference -d "@$SOURCE_DATE_EPOCH" {} +
mkdir -p "$out"
deb=$out/memdoctor_${DEB_VERSION}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
