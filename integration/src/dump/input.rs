//! What `surgedb binlog dump` reads: a file, or standard input when the argument is `-`.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use surge_binlog::BINLOG_MAGIC;
use tempfile::NamedTempFile;

use super::{DumpError, HexBytes};

/// The input of a dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A binlog file.
    File(PathBuf),
    /// Standard input (the argument `-`), e.g. `surgedb binlog dump - < mysql-bin.000001`.
    Stdin,
}

impl Input {
    /// `-` means standard input; anything else is a path.
    pub fn from_arg(arg: &OsStr) -> Input {
        if arg == "-" {
            Input::Stdin
        } else {
            Input::File(PathBuf::from(arg))
        }
    }

    /// The name messages use: the path as given, or `standard input`.
    pub fn name(&self) -> String {
        match self {
            Input::File(path) => path.display().to_string(),
            Input::Stdin => "standard input".to_owned(),
        }
    }

    /// Makes the input readable as a file whose first bytes are the binlog magic.
    ///
    /// Standard input is copied to a scratch file first (the binlog reader works on files, and
    /// a pipe cannot be measured or rewound); the scratch file lives as long as the result.
    ///
    /// # Errors
    /// [`DumpError::IsDirectory`] for a directory; [`DumpError::Open`] or
    /// [`DumpError::Read`] if the input cannot be opened or read;
    /// [`DumpError::Empty`], [`DumpError::TruncatedMagic`] or [`DumpError::NotBinlog`] if
    /// it does not start with the complete magic.
    pub(crate) fn open(&self) -> Result<Opened, DumpError> {
        let name = self.name();
        let read = |source| DumpError::Read {
            input: name.clone(),
            source,
        };
        let opened = match self {
            Input::File(path) if path.is_dir() => {
                return Err(DumpError::IsDirectory { input: name });
            }
            Input::File(path) => Opened {
                path: path.clone(),
                _scratch: None,
            },
            Input::Stdin => {
                let mut scratch = NamedTempFile::new().map_err(read)?;
                std::io::copy(&mut std::io::stdin().lock(), scratch.as_file_mut()).map_err(read)?;
                Opened {
                    path: scratch.path().to_path_buf(),
                    _scratch: Some(scratch),
                }
            }
        };
        let file = File::open(&opened.path).map_err(|source| DumpError::Open {
            input: name.clone(),
            source,
        })?;
        let mut start = Vec::with_capacity(BINLOG_MAGIC.len());
        file.take(BINLOG_MAGIC.len() as u64)
            .read_to_end(&mut start)
            .map_err(read)?;
        check_magic(&name, start)?;
        Ok(opened)
    }
}

/// An input ready for the binlog reader.
#[derive(Debug)]
pub(crate) struct Opened {
    path: PathBuf,
    /// Keeps the copy of standard input until the dump is done (deleted on drop).
    _scratch: Option<NamedTempFile>,
}

impl Opened {
    /// The file to read.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// Sorts the input's first (up to 4) bytes: the magic, nothing, a cut magic, or something else.
fn check_magic(name: &str, start: Vec<u8>) -> Result<(), DumpError> {
    let input = name.to_owned();
    if start == BINLOG_MAGIC {
        Ok(())
    } else if start.is_empty() {
        Err(DumpError::Empty { input })
    } else if BINLOG_MAGIC.starts_with(&start) {
        Err(DumpError::TruncatedMagic {
            input,
            found: HexBytes(start),
        })
    } else {
        Err(DumpError::NotBinlog {
            input,
            found: HexBytes(start),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bytes_sort_into_magic_empty_cut_or_foreign() {
        let cases: [(&[u8], &str); 6] = [
            (&[0xfe, b'b', b'i', b'n'], "ok"),
            (&[], "empty"),
            (&[0xfe], "cut"),
            (&[0xfe, b'b', b'i'], "cut"),
            (&[0xfe, b'x'], "foreign"),
            (b"PK\x03\x04", "foreign"),
        ];
        for (bytes, want) in cases {
            let got = match check_magic("f", bytes.to_vec()) {
                Ok(()) => "ok",
                Err(DumpError::Empty { .. }) => "empty",
                Err(DumpError::TruncatedMagic { .. }) => "cut",
                Err(DumpError::NotBinlog { .. }) => "foreign",
                Err(e) => panic!("unexpected {e}"),
            };
            assert_eq!(got, want, "{bytes:02x?}");
        }
    }

    #[test]
    fn a_dash_is_standard_input_and_anything_else_a_path() {
        assert_eq!(Input::from_arg(OsStr::new("-")), Input::Stdin);
        assert_eq!(
            Input::from_arg(OsStr::new("./-")),
            Input::File(PathBuf::from("./-"))
        );
        assert_eq!(Input::Stdin.name(), "standard input");
    }
}
