//! Builds `qlink_fold.so` (plugins/fold plus its own static copy of libqlink,
//! only the entry point exported, as CMake's `ql_add_plugin` does) without
//! CMake, so `cargo test --locked` works from a clean checkout. Its path
//! reaches the tests through the `QLINK_FOLD_PLUGIN` compile-time variable.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every `*.c` of `dir` except tests and fuzzers, sorted.
fn c_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    out.retain(|p| {
        let n = p.file_name().unwrap().to_string_lossy();
        n.ends_with(".c") && !n.ends_with("_test.c") && !n.ends_with("_fuzz.c")
    });
    out.sort();
    out
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let repo = manifest.join("../..").canonicalize().expect("repository root");
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    for watched in ["src", "include", "plugins/fold"] {
        println!("cargo:rerun-if-changed={}", repo.join(watched).display());
    }
    println!("cargo:rerun-if-changed=build.rs");

    let mut libqlink = Vec::new();
    let mut dirs: Vec<PathBuf> = fs::read_dir(repo.join("src")).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    for d in dirs {
        libqlink.extend(c_files(&d));
    }
    let fold = c_files(&repo.join("plugins/fold"));
    assert!(!fold.is_empty(), "no sources in plugins/fold");

    // The cc crate only picks the compiler (honouring CC); the shared object
    // is linked by one direct call.
    let compiler = cc::Build::new().get_compiler();
    let output = out_dir.join("qlink_fold.so");
    let mut cmd = Command::new(compiler.path());
    cmd.args(["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE"])
        .args(["-O2", "-g", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Wextra"])
        .arg(format!("-I{}", repo.join("include").display()))
        .arg(format!("-I{}", repo.join("plugins/fold").display()))
        .args(&fold)
        .args(&libqlink)
        .arg("-o")
        .arg(&output)
        .args(["-lpthread", "-ldl", "-lm"]);
    let status = cmd.status().expect("running the C compiler");
    assert!(status.success(), "building qlink_fold.so failed: {cmd:?}");
    println!("cargo:rustc-env=QLINK_FOLD_PLUGIN={}", output.display());
}
