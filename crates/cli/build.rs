//! Links the unwinder into the binaries statically on Linux with glibc.
//!
//! A host starts `cairn-hook` twice per tool call, so its start is paid on every call. On
//! `x86_64-unknown-linux-gnu` the standard library asks for the unwinder as the shared
//! `libgcc_s.so.1` (`-lgcc_s`); loading it and running its constructor, which probes the
//! CPU with `cpuid` (slow on a virtual machine), cost 0.12–0.14 ms per process on the CI
//! machine — 0.25 ms per tool call (see `docs/guide/benchmarks.md`). A fully static build
//! (`crt-static`) cannot be asked of `cargo install` without `--target` (the workspace's
//! proc-macros must stay dynamic), but the unwinder alone can be linked in: GCC ships the same
//! unwinder as the static archive `libgcc_eh.a`, which is what `-static-libgcc` links. This
//! script offers that archive under the name the linker looks for, `libgcc_s.a`, in a folder
//! searched before the system's, so `-lgcc_s` resolves to it. Nothing else changes: libc stays shared, and a
//! panic unwinds and is caught exactly as before (the hook tests' `catch_unwind` paths run
//! on it).
//!
//! The alias is offered only once a small position-independent program that unwinds has been
//! linked with it by the C compiler (a `libgcc_eh.a` built without `-fPIC`, as on a GCC that
//! does not make PIE by default, cannot go into Rust's PIE binaries). It does nothing
//! elsewhere, when cross-compiling, when `crt-static` is already asked for, or when that probe
//! fails: the binaries then link `libgcc_s.so.1` as usual, and the build says so.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CC");
    let var = |name: &str| env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("TARGET") != var("HOST")
    {
        return;
    }
    // What was decided is told to the package's tests (`CAIRN_UNWINDER`), which check it.
    if var("CARGO_CFG_TARGET_FEATURE")
        .split(',')
        .any(|feature| feature == "crt-static")
    {
        println!("cargo::rustc-env=CAIRN_UNWINDER=static");
        return;
    }
    let dir = PathBuf::from(var("OUT_DIR")).join("static-unwinder");
    match offer_static_unwinder(&dir) {
        Ok(()) => {
            println!("cargo::rustc-link-search=native={}", dir.display());
            println!("cargo::rustc-env=CAIRN_UNWINDER=static");
        }
        Err(why) => {
            let why = why.replace(['\n', '\r'], " ");
            println!(
                "cargo::warning=the binaries link the shared unwinder (libgcc_s.so.1), so each hook process starts about 0.13 ms later: {why}"
            );
            println!("cargo::rustc-env=CAIRN_UNWINDER=shared: {why}");
        }
    }
}

/// Puts `libgcc_s.a` → `libgcc_eh.a` in `dir` and checks a PIE program links with it; on any
/// failure `dir` holds no alias.
fn offer_static_unwinder(dir: &Path) -> Result<(), String> {
    let cc = env::var_os("CC").unwrap_or_else(|| "cc".into());
    let archive = static_unwinder(&cc).ok_or("the C compiler knows no libgcc_eh.a")?;
    let alias = dir.join("libgcc_s.a");
    let io = |e: std::io::Error| format!("{}: {e}", dir.display());
    std::fs::create_dir_all(dir).map_err(io)?;
    match std::fs::remove_file(&alias) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
        _ => {}
    }
    link(&archive, &alias).map_err(io)?;
    let probed = probe(&cc, dir).map_err(|why| format!("{}: {why}", archive.display()));
    if probed.is_err() {
        let _ = std::fs::remove_file(&alias);
    }
    probed
}

/// Links a PIE program that unwinds with `-lgcc_s` searched in `dir` first, as the binaries'
/// link will.
fn probe(cc: &std::ffi::OsStr, dir: &Path) -> Result<(), String> {
    let source = dir.join("probe.c");
    std::fs::write(
        &source,
        "int _Unwind_Backtrace(void *, void *);\nint main(void) { return _Unwind_Backtrace(0, 0) < 0; }\n",
    )
    .map_err(|e| format!("{}: {e}", source.display()))?;
    let out = Command::new(cc)
        .args(["-fPIE", "-pie"])
        .arg(&source)
        .arg("-o")
        .arg(dir.join("probe"))
        .arg("-L")
        .arg(dir)
        .arg("-lgcc_s")
        .output()
        .map_err(|e| format!("the C compiler could not be run: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "does not link into a PIE program: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
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

/// `libgcc_eh.a` as the C compiler `cc` finds it.
fn static_unwinder(cc: &std::ffi::OsStr) -> Option<PathBuf> {
    let output = Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    let printed = String::from_utf8(output.stdout).ok()?;
    let path = Path::new(printed.trim());
    // A compiler that does not know the file prints its bare name back.
    (output.status.success() && path.is_absolute() && path.is_file()).then(|| path.to_path_buf())
}
