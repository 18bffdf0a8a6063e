//! The committed header `include/tenon.h` is what cbindgen generates from the crate
//! today: a signature changed without regenerating it fails here. `TENON_BLESS=1 cargo
//! test -p tenon-capi --test header` rewrites it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[test]
fn header_is_current() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let config = cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")).unwrap();
    let bindings = cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not read the crate");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = String::from_utf8(generated).unwrap();
    let path = format!("{dir}/include/tenon.h");
    if std::env::var_os("TENON_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/tenon.h is stale: the C API changed; regenerate it with \
         `TENON_BLESS=1 cargo test -p tenon-capi --test header` and commit it"
    );
}
