//! The floor for the desktop benchmarks: an empty Tauri page built exactly like Codewright (same
//! crate, profile and features), so `scripts/bench-desktop.py` can report Codewright's launch time
//! and memory as ratios to what any Tauri app costs on this machine.
//! `cargo build --release --features custom-protocol --example floor`

fn main() {
    tauri::Builder::default()
        .run(tauri::generate_context!(
            "src-tauri/examples/floor/tauri.conf.json"
        ))
        .expect("the floor app failed to start");
}
