//! Compiles the XDP program of `run --path af_xdp` (src/measure/nic/xdp/probe.bpf.c) into OUT_DIR with clang; the
//! binary embeds the object (include_bytes!). The object is BPF bytecode (little-endian, bpfel), the same whatever
//! the host or target architecture, so a cross build needs only the build machine's clang.

use std::path::PathBuf;
use std::process::Command;

const SOURCE: &str = "src/measure/nic/xdp/probe.bpf.c";

fn main() {
    println!("cargo:rerun-if-changed={SOURCE}");
    println!("cargo:rerun-if-env-changed=CLANG");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let object = out.join("probe.bpf.o");
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".to_string());
    // -g writes the directory clang runs in (the source tree) into the object's debug info, which the binary
    // embeds: map it to "." so that the binary does not depend on where it was built.
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let status = Command::new(&clang)
        .args([
            "-O2", "-g", "-target", "bpfel", "-Wall", "-Werror", "-c", SOURCE, "-o",
        ])
        .arg(&object)
        .arg(format!("-fdebug-prefix-map={dir}=."))
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{clang} could not compile the XDP program {SOURCE} ({s})"),
        Err(e) => panic!(
            "building rmp-eval needs clang to compile its XDP program {SOURCE}: running `{clang}` failed: {e} \
             (Debian: apt install clang; or set CLANG to its path)"
        ),
    }
}
