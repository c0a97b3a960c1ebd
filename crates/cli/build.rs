//! Links the unwinder into the binaries statically on Linux with glibc.
//!
//! A host starts `cairn-hook` twice per tool call, so its start is paid on every call. On
//! `x86_64-unknown-linux-gnu` the standard library asks for the unwinder as the shared
//! `libgcc_s.so.1` (`-lgcc_s`); loading it and running its constructor, which probes the
//! CPU with `cpuid` (slow on a virtual machine), cost 0.12–0.14 ms per process on the CI
//! machine — 0.25 ms per tool call (see `docs/guide/benchmarks.md`). A fully static build (`crt-static`)
//! cannot be asked of `cargo install` without `--target` (the workspace's proc-macros must
//! stay dynamic), but the unwinder alone can be linked in: GCC ships the same unwinder as the
//! static archive `libgcc_eh.a`, which is what `-static-libgcc` links. This script offers
//! that archive under the name the linker looks for, `libgcc_s.a`, in a folder searched before
//! the system's, so `-lgcc_s` resolves to it. Nothing else changes: libc stays shared, and a
//! panic unwinds and is caught exactly as before (the hook tests' `catch_unwind` paths run
//! on it).
//!
//! It does nothing elsewhere, when cross-compiling, when `crt-static` is already asked for,
//! or when the C compiler does not know a `libgcc_eh.a` (the binaries then link
//! `libgcc_s.so.1` as usual).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CC");
    let var = |name: &str| env::var(name).unwrap_or_default();
    let static_crt = var("CARGO_CFG_TARGET_FEATURE")
        .split(',')
        .any(|feature| feature == "crt-static");
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("TARGET") != var("HOST")
        || static_crt
    {
        return;
    }
    let Some(archive) = static_unwinder() else {
        println!(
            "cargo::warning=no libgcc_eh.a found; cairn-hook links the shared unwinder (libgcc_s.so.1) and starts about 0.1 ms slower"
        );
        return;
    };
    let dir = PathBuf::from(var("OUT_DIR")).join("static-unwinder");
    let alias = dir.join("libgcc_s.a");
    let made = std::fs::create_dir_all(&dir).and_then(|()| {
        match std::fs::remove_file(&alias) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        link(&archive, &alias)
    });
    match made {
        Ok(()) => println!("cargo::rustc-link-search=native={}", dir.display()),
        Err(e) => println!(
            "cargo::warning=could not offer {} as the unwinder ({e}); linking the shared one",
            archive.display()
        ),
    }
}

#[cfg(unix)]
fn link(original: &Path, alias: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(original, alias)
}

/// A build script runs on the host: one that is not Unix builds a Linux target only when
/// cross-compiling, which `main` leaves alone.
#[cfg(not(unix))]
fn link(original: &Path, alias: &Path) -> std::io::Result<()> {
    std::fs::copy(original, alias).map(|_| ())
}

/// `libgcc_eh.a` as the C compiler that links the binaries finds it.
fn static_unwinder() -> Option<PathBuf> {
    let cc = env::var_os("CC").unwrap_or_else(|| "cc".into());
    let output = Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    let printed = String::from_utf8(output.stdout).ok()?;
    let path = Path::new(printed.trim());
    // A compiler that does not know the file prints its bare name back.
    (output.status.success() && path.is_absolute() && path.is_file()).then(|| path.to_path_buf())
}
