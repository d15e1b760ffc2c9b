//! Builds what the adapter links and what its tests load, with no CMake:
//! - libqlink (every `src/<concern>/*.c` of the repository except tests and
//!   fuzzers) as a static library linked into this crate;
//! - `csrc/layout.c`, which reports the C compiler's sizeof/offsetof of the
//!   ABI structs so a test can pin the Rust mirrors to them;
//! - the plugins the tests and the benchmark load, as shared objects in
//!   `$OUT_DIR/plugins/` (each with its own static copy of libqlink and only
//!   the entry point exported, as CMake's `ql_add_plugin` builds them). Their
//!   paths reach the code through `QLINK_<NAME>_PLUGIN` environment variables
//!   set at compile time.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const C_FLAGS: &[&str] = &["-std=c11", "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE"];

fn c_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else { return out };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with(".c") && !name.ends_with("_test.c") && !name.ends_with("_fuzz.c") {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn libqlink_sources(repo: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = fs::read_dir(repo.join("src"))
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    dirs.sort();
    for dir in dirs {
        out.extend(c_files(&dir));
    }
    out
}

/// Compile one plugin into a shared object with a direct compiler call.
fn build_plugin(cc_path: &Path, repo: &Path, out_dir: &Path, name: &str, sources: &[PathBuf], libqlink: &[PathBuf]) {
    let plugins = out_dir.join("plugins");
    fs::create_dir_all(&plugins).unwrap();
    let output = plugins.join(format!("{name}.so"));
    let mut cmd = Command::new(cc_path);
    cmd.args(C_FLAGS)
        .args(["-O2", "-g", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Wextra"])
        .arg(format!("-I{}", repo.join("include").display()))
        .args(sources)
        .args(libqlink)
        .arg("-o")
        .arg(&output)
        .args(["-lpthread", "-ldl", "-lm"]);
    let status = cmd.status().expect("running the C compiler");
    if !status.success() {
        panic!("building plugin {name} failed: {cmd:?}");
    }
    let var = format!("QLINK_{}_PLUGIN", name.trim_start_matches("qlink_").to_uppercase());
    println!("cargo:rustc-env={var}={}", output.display());
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let repo = manifest.join("../..").canonicalize().expect("repository root");
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    for watched in ["src", "include", "plugins/sample/src"] {
        println!("cargo:rerun-if-changed={}", repo.join(watched).display());
    }
    println!("cargo:rerun-if-changed=csrc");
    println!("cargo:rerun-if-changed=bench_plugin");
    println!("cargo:rerun-if-changed=build.rs");

    let libqlink = libqlink_sources(&repo);
    let mut build = cc::Build::new();
    build.include(repo.join("include")).pic(true).warnings(false);
    for flag in C_FLAGS {
        build.flag(flag);
    }
    build.files(&libqlink).file(manifest.join("csrc/layout.c"));
    build.compile("qlink_c");
    println!("cargo:rustc-link-lib=pthread");
    println!("cargo:rustc-link-lib=dl");
    println!("cargo:rustc-link-lib=m");

    let cc_path = build.get_compiler().path().to_path_buf();
    let sample = c_files(&repo.join("plugins/sample/src"));
    if !sample.is_empty() {
        build_plugin(&cc_path, &repo, &out_dir, "qlink_sample", &sample, &libqlink);
    }
    let dftest = c_files(&manifest.join("bench_plugin"));
    build_plugin(&cc_path, &repo, &out_dir, "qlink_dftest", &dftest, &libqlink);
}
