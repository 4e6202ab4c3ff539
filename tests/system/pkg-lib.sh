# Shared by the package tests (package.sh, container.sh): the Debian package built once per build directory.
# Source it after lib.sh.

# build_deb: build ngx-autotune_*.deb from the source tree as it is (every file git tracks or would track, with
# its changes; debian/ included) with dpkg-buildpackage, under $builddir/packages, once: a second call, or a test
# running beside the first, waits on the lock and reuses the package while no source file is newer. Prints the
# .deb's path; returns non-zero (with the build's last lines on stderr) when it cannot be built.
build_deb() {
	local out=$builddir/packages deb
	mkdir -p "$out" || return 1
	(
		flock -w 900 9 || { echo "build_deb: lock not taken in 900 s" >&2; exit 1; }
		deb=$(ls "$out"/ngx-autotune_*.deb 2>/dev/null | head -1)
		if [ -n "$deb" ] && [ -z "$(cd "$srcdir" && find $(git ls-files 2>/dev/null | sed 's|/.*||' | sort -u) \
			-newer "$deb" -type f 2>/dev/null | head -1)" ]; then
			exit 0
		fi
		rm -rf "$out/src" "$out"/ngx-autotune*.deb "$out"/ngx-autotune_*.changes "$out"/ngx-autotune_*.buildinfo
		mkdir -p "$out/src" || exit 1
		(cd "$srcdir" && { git ls-files; git ls-files --others --exclude-standard; } | sort -u |
			while IFS= read -r f; do [ -e "$f" ] && printf '%s\n' "$f"; done | tar -cf - -T -) |
			tar -xf - -C "$out/src" || exit 1
		if ! (cd "$out/src" && timeout 900 dpkg-buildpackage -us -uc -b >"$out/build.log" 2>&1); then
			tail -n 30 "$out/build.log" >&2
			exit 1
		fi
	) 9>"$out.lock" || return 1
	deb=$(ls "$out"/ngx-autotune_*.deb 2>/dev/null | grep -v dbgsym | head -1)
	[ -n "$deb" ] && echo "$deb"
}
