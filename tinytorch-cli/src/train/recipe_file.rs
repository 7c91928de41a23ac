//! `tinytorch train --config FILE`: a recipe as a TOML file whose keys are the flags of
//! `train` (`lr-schedule = "cosine"`, `batch_size = 128`, `augment-flip = true`, lists for
//! per-channel values). The file's settings are put before the command line's flags, so a
//! flag given on the command line wins over the file, and every value is checked by the same
//! parser as the flag.

use std::ffi::OsString;
use std::path::Path;
use tinytorch::{Error, Result};

/// The command line with the recipe file of `train --config FILE` (or `--config=FILE`)
/// spliced in as flags right after `train`; any other command line unchanged.
pub fn expand_config_args(args: Vec<OsString>) -> Result<Vec<OsString>> {
    // The subcommand is the first argument after the program name (`tinytorch` has no
    // options of its own that take a value).
    if args.get(1).and_then(|a| a.to_str()) != Some("train") {
        return Ok(args);
    }
    let mut file = None;
    for (i, a) in args.iter().enumerate().skip(2) {
        match a.to_str() {
            Some("--config") => file = args.get(i + 1).cloned(),
            Some(s) if s.starts_with("--config=") => file = Some(s["--config=".len()..].into()),
            _ => {}
        }
    }
    let Some(file) = file else {
        return Ok(args);
    };
    let flags = recipe_flags(Path::new(&file))?;
    let mut out = args[..2].to_vec();
    out.extend(flags.into_iter().map(OsString::from));
    out.extend(args[2..].iter().cloned());
    Ok(out)
}

/// The flags a recipe file stands for.
pub fn recipe_flags(path: &Path) -> Result<Vec<String>> {
    let bad =
        |what: String| Error::invalid("train --config", format!("{}: {what}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| bad(e.to_string()))?;
    let mut flags = Vec::new();
    for (key, value) in &table {
        let flag = format!("--{}", key.replace('_', "-"));
        if matches!(flag.as_str(), "--config" | "--resume") {
            return Err(bad(format!("'{key}' cannot be set in a recipe file")));
        }
        let scalar = |v: &toml::Value| -> Result<String> {
            match v {
                toml::Value::String(s) => Ok(s.clone()),
                toml::Value::Integer(i) => Ok(i.to_string()),
                toml::Value::Float(f) => Ok(f.to_string()),
                other => Err(bad(format!(
                    "'{key}' holds a {}, expected a string, number, boolean or list",
                    other.type_str()
                ))),
            }
        };
        match value {
            toml::Value::Boolean(true) => flags.push(flag),
            toml::Value::Boolean(false) => {}
            toml::Value::Array(items) => {
                let items = items.iter().map(scalar).collect::<Result<Vec<_>>>()?;
                flags.push(format!("{flag}={}", items.join(",")));
            }
            v => flags.push(format!("{flag}={}", scalar(v)?)),
        }
    }
    Ok(flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tinytorch-recipe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn recipe_keys_become_flags_before_the_command_line() {
        let path = write(
            "r.toml",
            "model = \"resnet20\"\nbatch_size = 128\nlr = 0.1\naugment-flip = true\n\
             no_eval = false\nnormalize-mean = [0.5, 0.25]\n",
        );
        let argv: Vec<OsString> = ["tinytorch", "train", "--lr", "0.2", "--config"]
            .iter()
            .map(OsString::from)
            .chain([path.clone().into_os_string()])
            .collect();
        let got = expand_config_args(argv).unwrap();
        let got: Vec<&str> = got.iter().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(
            &got[..7],
            [
                "tinytorch",
                "train",
                "--augment-flip",
                "--batch-size=128",
                "--lr=0.1",
                "--model=resnet20",
                "--normalize-mean=0.5,0.25"
            ]
        );
        assert_eq!(&got[7..9], ["--lr", "0.2"]);
    }

    #[test]
    fn bad_recipe_files_name_the_file_and_the_problem() {
        let path = write("bad.toml", "lr = \n");
        let e = recipe_flags(&path).unwrap_err().to_string();
        assert!(e.contains("bad.toml"), "{e}");
        let path = write("nested.toml", "[optimizer]\nlr = 1\n");
        let e = recipe_flags(&path).unwrap_err().to_string();
        assert!(e.contains("'optimizer' holds a table"), "{e}");
        let e = recipe_flags(Path::new("/nonexistent/r.toml")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/r.toml"), "{e}");
    }
}
