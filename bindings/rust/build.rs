// SPDX-License-Identifier: Apache-2.0
//! Builds the C side through the repository's CMakeLists.txt (the one
//! description of how C is compiled: flags, `-Werror`, which files make
//! libqlink and each plugin), then reads the ABI headers with bindgen for the
//! compile-time layout checks of `src/abi.rs`.
//!
//! - CMake configures `$OUT_DIR/cmake` (RelWithDebInfo) and builds libqlink
//!   (linked statically into this crate) and the plugins the workspace's
//!   tests and benchmarks load, into `$OUT_DIR/cmake/plugins`
//!   (`QLINK_PLUGIN_DIR`, see `qlink_sys::plugins`).
//! - bindgen writes `$OUT_DIR/abi_bindgen.rs` from `wrapper.h`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The CMake targets Rust code links or loads.
const TARGETS: &[&str] = &["qlink", "qlink_sample_plugin", "qlink_fold_plugin", "qlink_zarr_plugin", "qlink_dftest_plugin"];

fn run(cmd: &mut Command) {
    let status =
        cmd.status().unwrap_or_else(|e| panic!("qlink-sys: cannot run {cmd:?}: {e} (is cmake installed? scripts/setup.sh installs it)"));
    assert!(status.success(), "qlink-sys: {cmd:?} failed");
}

fn cmake_build(repo: &Path, out: &Path) -> PathBuf {
    let dir = out.join("cmake");
    if !dir.join("CMakeCache.txt").exists() {
        run(Command::new("cmake")
            .arg("-S")
            .arg(repo)
            .arg("-B")
            .arg(&dir)
            .args(["-DCMAKE_BUILD_TYPE=RelWithDebInfo", "--log-level=WARNING"]));
    }
    let jobs = env::var("NUM_JOBS").unwrap_or_else(|_| "2".into());
    run(Command::new("cmake").arg("--build").arg(&dir).args(["-j", &jobs, "--target"]).args(TARGETS));
    dir
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let repo = manifest.join("../..").canonicalize().expect("qlink-sys: repository root");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    for watched in ["CMakeLists.txt", "src", "include", "tests/dftest"] {
        println!("cargo:rerun-if-changed={}", repo.join(watched).display());
    }
    // The C plugins CMake builds; not plugins/rust, a workspace of its own.
    for entry in std::fs::read_dir(repo.join("plugins")).expect("qlink-sys: plugins/").flatten() {
        if entry.file_name() != "rust" {
            println!("cargo:rerun-if-changed={}", entry.path().display());
        }
    }
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=build.rs");

    if env::var_os("CARGO_FEATURE_LIBQLINK").is_some() {
        link_libqlink(&repo, &out);
    }
    bindgen_headers(&manifest, &repo, &out);
}

/// Builds libqlink and the test plugins with CMake and links libqlink.
fn link_libqlink(repo: &Path, out: &Path) {
    let build = cmake_build(repo, out);
    println!("cargo:rustc-link-search=native={}", build.join("src").display());
    println!("cargo:rustc-link-lib=static=qlink");
    for lib in ["pthread", "dl", "m"] {
        println!("cargo:rustc-link-lib={lib}");
    }
    println!("cargo:rustc-env=QLINK_PLUGIN_DIR={}", build.join("plugins").display());
}

/// Reads the ABI headers with bindgen, for the compile-time layout checks.
fn bindgen_headers(manifest: &Path, repo: &Path, out: &Path) {
    bindgen::Builder::default()
        .header(manifest.join("wrapper.h").to_string_lossy())
        .clang_arg(format!("-I{}", repo.join("include").display()))
        .allowlist_type("ql_.*")
        .allowlist_var("QL_.*")
        .prepend_enum_name(false)
        .default_enum_style(bindgen::EnumVariation::Consts)
        .layout_tests(false)
        .generate()
        .expect("qlink-sys: bindgen could not read include/qlink (libclang from clang-14, scripts/setup.sh)")
        .write_to_file(out.join("abi_bindgen.rs"))
        .expect("qlink-sys: writing abi_bindgen.rs");
}
