//! Writes a generated machine tree (tests/untrusted/machine_gen.rs) for benchmarks and manual runs:
//! `cargo run --release --example gen_machine -- DIR CPUS [IRQS [THREADS]]` (IRQS defaults to CPUS, THREADS to
//! 3,000). DIR must not exist.

#[path = "../tests/untrusted/machine_gen.rs"]
mod machine_gen;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let usage = || -> ! {
        eprintln!("usage: gen_machine DIR CPUS [IRQS [THREADS]]");
        std::process::exit(2)
    };
    let (Some(dir), Some(cpus)) = (a.first(), a.get(1).and_then(|c| c.parse().ok())) else {
        usage()
    };
    let num = |i: usize, d: usize| a.get(i).map_or(Some(d), |v| v.parse().ok());
    let (Some(irqs), Some(threads)) = (num(2, cpus), num(3, 3000)) else {
        usage()
    };
    let m = machine_gen::Machine {
        cpus,
        irqs,
        threads,
    };
    if let Err(e) = std::fs::create_dir(dir).and_then(|_| machine_gen::generate(dir.as_ref(), &m)) {
        eprintln!("gen_machine: {dir}: {e}");
        std::process::exit(2);
    }
}
