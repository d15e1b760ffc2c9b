//! Builds `qlink_fold.so` and `qlink_sample.so` (plugins/fold/src and
//! plugins/sample/src, each with its own static copy of libqlink and only the
//! entry point exported, as CMake's `ql_add_plugin` does) without CMake, so
//! `cargo test --locked` works from a clean checkout. Their paths reach the
//! tests through the `QLINK_FOLD_PLUGIN` and `QLINK_SAMPLE_PLUGIN`
//! compile-time variables.

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
    for watched in ["src", "include", "plugins/fold/src", "plugins/sample/src"] {
        println!("cargo:rerun-if-changed={}", repo.join(watched).display());
    }
    println!("cargo:rerun-if-changed=build.rs");

    let mut libqlink = Vec::new();
    let mut dirs: Vec<PathBuf> = fs::read_dir(repo.join("src")).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    for d in dirs {
        libqlink.extend(c_files(&d));
    }
    // The cc crate only picks the compiler (honouring CC); each shared
    // object is linked by one direct call.
    let compiler = cc::Build::new().get_compiler();
    for (name, dir, var) in [("qlink_fold", "plugins/fold/src", "QLINK_FOLD_PLUGIN"), ("qlink_sample", "plugins/sample/src", "QLINK_SAMPLE_PLUGIN")] {
        let sources = c_files(&repo.join(dir));
        assert!(!sources.is_empty(), "no sources in {dir}");
        let output = out_dir.join(format!("{name}.so"));
        let mut cmd = Command::new(compiler.path());
        cmd.args(["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE"])
            .args(["-O2", "-g", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Wextra"])
            .arg(format!("-I{}", repo.join("include").display()))
            .arg(format!("-I{}", repo.join(dir).display()))
            .args(&sources)
            .args(&libqlink)
            .arg("-o")
            .arg(&output)
            .args(["-lpthread", "-ldl", "-lm"]);
        let status = cmd.status().expect("running the C compiler");
        assert!(status.success(), "building {name}.so failed: {cmd:?}");
        println!("cargo:rustc-env={var}={}", output.display());
    }
}
