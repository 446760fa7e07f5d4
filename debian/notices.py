#!/usr/bin/env python3
"""The crates compiled into the shipped binary, for one Rust target, and what their licences ask to go with it.

The set: `cargo tree -e normal --target T` (the features cargo actually resolves for a release build, without
dev-dependencies; proc-macro crates and their dependencies run at build time only and are left out). Each crate's
licence expression, source directory and repository: `cargo metadata --filter-platform T`; its sha256: Cargo.lock.
Its notices: the LICENSE*/LICENCE*/COPYING*/COPYRIGHT*/NOTICE*/UNLICENSE* files of the crate as published (in
cargo's registry cache).

Writes, each only when asked:
  --third-party FILE  every crate with its version, licence and features, then every licence text (deduplicated by
                      text: each distinct text once, with the crates it comes from)
  --sbom FILE         an SPDX 2.3 JSON document of the same crates (name, version, declared licence, sha256 from
                      Cargo.lock, purl, the dependency edges); created = SOURCE_DATE_EPOCH, so the build reproduces
  --substvars FILE    appends cargo:X-Cargo-Built-Using=NAME (= VERSION), ... for debian/control
  --list              prints "NAME VERSION LICENCE" a line (the licence gate test compares it with its own reading)
"""

import argparse
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys
import tomllib

NOTICE = re.compile(r"^(licen[cs]e|copying|copyright|notice|unlicense)", re.IGNORECASE)


def cargo(*args):
    exe = os.environ.get("CARGO", "cargo")
    return subprocess.run([exe, *args], check=True, capture_output=True, text=True).stdout


def shipped(target):
    """[(depth, name, version, features)] in cargo tree's order, proc-macro subtrees left out."""
    out = cargo("tree", "--locked", "-e", "normal", "--target", target, "--prefix", "depth",
                "--no-dedupe", "-f", "{p}|{f}")
    rows, skip_below = [], None
    for line in out.splitlines():
        m = re.match(r"^(\d+)(\S+) v(\S+)(?: \([^)]*\))?\|(.*?)(?: \(\*\))?$", line)
        if not m:
            continue
        depth = int(m.group(1))
        if skip_below is not None and depth > skip_below:
            continue
        skip_below = None
        if "(proc-macro)" in line:
            skip_below = depth
            continue
        feats = [f for f in m.group(4).replace(" (proc-macro)", "").split(",") if f]
        rows.append((depth, m.group(2), m.group(3), feats))
    return rows


def spdx_expr(licence):
    """Cargo's old "MIT/Apache-2.0" is "MIT OR Apache-2.0"."""
    return " OR ".join(p.strip() for p in licence.split("/")) if licence and "/" in licence else licence


def notice_files(pkg):
    d = os.path.dirname(pkg["manifest_path"])
    names = {n for n in os.listdir(d) if NOTICE.match(n) and os.path.isfile(os.path.join(d, n))}
    if pkg.get("license_file"):
        names.add(pkg["license_file"])
    return [(n, os.path.join(d, n)) for n in sorted(names)]


def collect(target):
    meta = json.loads(cargo("metadata", "--locked", "--format-version", "1", "--filter-platform",
                            target))
    by_key = {(p["name"], p["version"]): p for p in meta["packages"]}
    with open(os.path.join(meta["workspace_root"], "Cargo.lock"), "rb") as f:
        lock = {(p["name"], p["version"]): p.get("checksum") for p in tomllib.load(f)["package"]}
    rows = shipped(target)
    root = rows[0]
    crates, edges, stack = {}, set(), []
    for depth, name, version, feats in rows:
        key = (name, version)
        del stack[depth:]
        if stack:
            edges.add((stack[-1], key))
        stack.append(key)
        if depth == 0:
            continue
        pkg = by_key[key]
        crates[key] = {
            "name": name, "version": version, "licence": spdx_expr(pkg.get("license")) or "NOASSERTION",
            "features": feats, "repository": pkg.get("repository") or "", "checksum": lock.get(key),
            "files": notice_files(pkg),
        }
    return by_key[root[1:3]], crates, edges


def third_party(root, crates, target):
    out = [f"{root['name']} {root['version']} ({target}): the Rust crates compiled into the binary",
           "",
           "Generated when the package was built, from `cargo tree -e normal`, `cargo metadata` and each crate's",
           "own licence and notice files as published on crates.io. Each crate is under the licence its",
           "Cargo.toml declares (an expression with OR: any one of them). Crates, then every licence text once.",
           ""]
    for c in sorted(crates.values(), key=lambda c: (c["name"], c["version"])):
        feats = ", ".join(c["features"]) or "none"
        out.append(f"{c['name']} {c['version']}: {c['licence']}; features: {feats}; {c['repository']}")
    texts = {}
    for c in sorted(crates.values(), key=lambda c: (c["name"], c["version"])):
        for fname, path in c["files"]:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = "\n".join(line.rstrip() for line in f.read().replace("\r\n", "\n").split("\n")).strip()
            texts.setdefault(text, []).append(f"{c['name']} {c['version']} ({fname})")
    out.append("")
    for i, (text, users) in enumerate(texts.items(), 1):
        out += ["", "=" * 78, f"Text {i} of {len(texts)}, from: " + ", ".join(users), "=" * 78, "", text]
    return "\n".join(out) + "\n"


def rustc_version():
    """The compiler that cargo runs, e.g. "rustc 1.95.0 (59807616e 2026-04-14)", written "rustc-1.95.0 (...)"."""
    out = subprocess.run([os.environ.get("RUSTC", "rustc"), "-V"], check=True, capture_output=True, text=True).stdout
    return out.strip().replace(" ", "-", 1)


def sbom(root, crates, edges, target):
    def ref(key):
        return "SPDXRef-Package-" + re.sub(r"[^A-Za-z0-9.-]", "-", f"{key[0]}-{key[1]}")

    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    created = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    rkey = (root["name"], root["version"])
    digest = hashlib.sha256(json.dumps(sorted(crates), separators=(",", ":")).encode()).hexdigest()[:16]
    packages = [{
        "SPDXID": ref(rkey), "name": root["name"], "versionInfo": root["version"],
        "downloadLocation": "NOASSERTION", "filesAnalyzed": False, "primaryPackagePurpose": "APPLICATION",
        "licenseConcluded": spdx_expr(root.get("license")), "licenseDeclared": spdx_expr(root.get("license")),
        "copyrightText": "NOASSERTION", "supplier": "NOASSERTION",
    }]
    for key, c in sorted(crates.items()):
        p = {
            "SPDXID": ref(key), "name": c["name"], "versionInfo": c["version"],
            "downloadLocation": f"https://crates.io/api/v1/crates/{c['name']}/{c['version']}/download",
            "filesAnalyzed": False, "primaryPackagePurpose": "LIBRARY",
            "licenseConcluded": "NOASSERTION", "licenseDeclared": c["licence"],
            "copyrightText": "NOASSERTION", "supplier": "NOASSERTION",
            "externalRefs": [{"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl",
                              "referenceLocator": f"pkg:cargo/{c['name']}@{c['version']}"}],
        }
        if c["checksum"]:
            p["checksums"] = [{"algorithm": "SHA256", "checksumValue": c["checksum"]}]
        packages.append(p)
    rels = [{"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES", "relatedSpdxElement": ref(rkey)}]
    rels += [{"spdxElementId": ref(a), "relationshipType": "DEPENDS_ON", "relatedSpdxElement": ref(b)}
             for a, b in sorted(edges)]
    return {
        "spdxVersion": "SPDX-2.3", "dataLicense": "CC0-1.0", "SPDXID": "SPDXRef-DOCUMENT",
        "name": f"{root['name']}-{root['version']}-{target}",
        "documentNamespace": f"https://example.invalid/rmp-eval/spdx/{root['name']}-{root['version']}-{target}-{digest}",
        # The compiler too: a rebuild reproduces the package only with the same rustc (docs/tasks/package.md).
        "creationInfo": {"created": created,
                         "creators": ["Tool: rmp-eval-debian-notices.py", f"Tool: {rustc_version()}"]},
        "packages": packages, "relationships": rels,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", required=True)
    ap.add_argument("--third-party")
    ap.add_argument("--sbom")
    ap.add_argument("--substvars")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    root, crates, edges = collect(a.target)
    if a.third_party:
        with open(a.third_party, "w", encoding="utf-8") as f:
            f.write(third_party(root, crates, a.target))
    if a.sbom:
        with open(a.sbom, "w", encoding="utf-8") as f:
            json.dump(sbom(root, crates, edges, a.target), f, indent=1, sort_keys=True)
            f.write("\n")
    if a.substvars:
        built = ", ".join(f"{n} (= {v})" for n, v in sorted(crates))
        with open(a.substvars, "a", encoding="utf-8") as f:
            f.write(f"cargo:X-Cargo-Built-Using={built}\n")
    if a.list:
        for (n, v), c in sorted(crates.items()):
            print(n, v, c["licence"])


if __name__ == "__main__":
    sys.exit(main())
