//! Every `tenon` command the README and `docs/` show runs as shown: the README's
//! `cargo run --release -p tenon-cli -- ARGS` lines exit 0, and each `$ tenon ARGS` block
//! in `docs/` prints what the block shows (the largest residual, which depends on the
//! machine's rounding, masked) with the exit status its first line implies.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tenon"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

/// "largest residual 2.8e-14" -> "largest residual *".
fn masked(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("largest residual ") {
            Some(at) => {
                let start = at + "largest residual ".len();
                let end = line[start..]
                    .find([';', ')'])
                    .map_or(line.len(), |k| start + k);
                format!("{}*{}", &line[..start], &line[end..])
            }
            None => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_readmes_tenon_commands_succeed() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let prefix = "cargo run --release -p tenon-cli -- ";
    let commands: Vec<&str> = readme
        .lines()
        .filter_map(|l| l.trim().strip_prefix(prefix))
        .collect();
    assert!(commands.len() >= 4, "{commands:?}");
    for command in commands {
        let args: Vec<&str> = command.split_whitespace().collect();
        let o = run(&args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{command}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!o.stdout.is_empty(), "{command} printed nothing");
    }
}

#[test]
fn the_outputs_shown_in_docs_are_what_tenon_prints() {
    let mut shown = 0;
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let Some(command) = line.strip_prefix("$ tenon ") else {
                continue;
            };
            let expected: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            let args: Vec<&str> = command.split_whitespace().collect();
            let o = run(&args);
            let failed = expected.first().is_some_and(|l| l.contains("NOT solved"));
            assert_eq!(
                o.status.code(),
                Some(i32::from(failed)),
                "{}: tenon {command}",
                path.display()
            );
            assert_eq!(
                masked(&String::from_utf8_lossy(&o.stdout)),
                masked(&expected.join("\n")),
                "{}: tenon {command}",
                path.display()
            );
            shown += 1;
        }
    }
    assert!(shown >= 4, "{shown} outputs checked");
}
