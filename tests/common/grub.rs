//! GRUB's effective command line computed as grub-mkconfig computes it: by sourcing the files with a real shell
//! (dash and bash), independent of fix's own reading of them.

use std::path::Path;
use std::process::Command;

/// GRUB_CMDLINE_LINUX and _DEFAULT after sourcing `root`'s /etc/default/grub and grub.d/*.cfg in name order, as
/// grub-mkconfig does, under `set -e`, with `shell` (sh is dash on Debian); Err: the shell's error. fix's drop-in
/// reads its state file in `root`.
pub fn source(root: &Path, shell: &str) -> Result<(String, String), String> {
    let scratch = tempfile::Builder::new()
        .prefix("fx-grub-")
        .tempdir()
        .unwrap();
    let mut files = Vec::new();
    let g = root.join("etc/default/grub");
    if g.is_file() {
        files.push(g);
    }
    let mut names: Vec<String> = std::fs::read_dir(root.join("etc/default/grub.d"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for n in names.iter().filter(|n| n.ends_with(".cfg")) {
        let p = root.join("etc/default/grub.d").join(n);
        if n.ends_with("rmp-eval.cfg") {
            let state = root.join("var/lib/rmp-eval/cmdline");
            let text = std::fs::read_to_string(&p)
                .unwrap()
                .replace("/var/lib/rmp-eval/cmdline", state.to_str().unwrap());
            let copy = scratch.path().join(n);
            std::fs::write(&copy, text).unwrap();
            files.push(copy);
        } else {
            files.push(p);
        }
    }
    let script = "set -e\nfor f in \"$@\"; do . \"$f\"; done\nprintf '%s\\0%s\\0' \"$GRUB_CMDLINE_LINUX\" \"$GRUB_CMDLINE_LINUX_DEFAULT\"\n";
    let out = Command::new(shell)
        .env("LC_ALL", "C")
        .arg("-c")
        .arg(script)
        .arg("grub-mkconfig")
        .args(&files)
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8(out.stdout).unwrap();
    let mut l = text.split('\0');
    Ok((
        l.next().unwrap_or("").to_string(),
        l.next().unwrap_or("").to_string(),
    ))
}
