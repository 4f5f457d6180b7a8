//! Where clap reads a command line otherwise than KCM's flag set (spf13/pflag, with component-base's
//! name normalization), the rules that make them agree, so that a command line written for KCM means
//! the same here or is refused as it is there.

use std::ffi::OsString;

/// pflag's two rules for a flag's value, applied to every argument of `command`:
/// - a flag that takes a value takes the next word, whatever it starts with: `--terminated-pod-gc-threshold
///   -0x10` is -16 and `--kubeconfig --v=2` a path, where clap would read any word starting with `-`
///   (other than a decimal number) as the next flag;
/// - a boolean flag takes a value only after `=` (pflag's `NoOptDefVal`): `--leader-elect false` is
///   the flag on and a stray `false`, which KCM refuses ("does not take any arguments"), where clap
///   would read it as the flag's value and turn leader election off;
/// - a boolean's value is any that Go's `strconv.ParseBool` takes ([`go_bool`]), not only `true` and
///   `false`.
pub(crate) fn as_pflag_reads(command: clap::Command) -> clap::Command {
    command.mut_args(|arg| {
        let boolean = arg.get_num_args().is_some_and(|n| n.min_values() == 0)
            && arg.get_possible_values().iter().any(|v| v.get_name() == "true");
        if boolean {
            arg.require_equals(true).value_parser(go_bool)
        } else if arg.get_action().takes_values() {
            arg.allow_hyphen_values(true)
        } else {
            arg
        }
    })
}

/// A boolean as pflag's `boolValue.Set` reads it (`strconv.ParseBool`).
fn go_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!("strconv.ParseBool: parsing {s:?}: invalid syntax")),
    }
}

/// `--kube_api_qps=20` as `--kube-api-qps=20`: KCM's flag set normalizes `_` in a flag's name to
/// `-` (component-base `WordSepNormalizeFunc`), so command lines written for it either way work
/// here. Only flag names change, never a value: not the word after a flag of `command` that takes
/// one (`--kubeconfig --my_file` keeps its path, as pflag takes that word whatever it starts with),
/// nor anything after `--`.
pub(crate) fn word_separators_as_dashes(command: &clap::Command, args: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut args = args.into_iter();
    // The program's name.
    out.extend(args.next());
    while let Some(arg) = args.next() {
        let Some(text) = arg.to_str() else {
            out.push(arg);
            continue;
        };
        if text == "--" {
            out.push(arg);
            out.extend(args.by_ref());
            break;
        }
        let (normalized, takes_next) = if let Some(flag) = text.strip_prefix("--") {
            let (name, value) = flag.split_once('=').map_or((flag, None), |(n, v)| (n, Some(v)));
            let name = name.replace('_', "-");
            let takes_next = value.is_none()
                && command
                    .get_arguments()
                    .find(|a| a.get_long() == Some(name.as_str()))
                    .is_some_and(takes_a_word);
            let normalized = match value {
                Some(v) => format!("--{name}={v}"),
                None => format!("--{name}"),
            };
            (OsString::from(normalized), takes_next)
        } else {
            // `-v 2`: a short flag alone in its word takes the next one too.
            let mut chars = text.chars();
            let short = match (chars.next(), chars.next(), chars.next()) {
                (Some('-'), Some(c), None) => Some(c),
                _ => None,
            };
            let takes_next = short.is_some_and(|c| {
                command
                    .get_arguments()
                    .find(|a| a.get_short() == Some(c))
                    .is_some_and(takes_a_word)
            });
            (arg, takes_next)
        };
        out.push(normalized);
        if takes_next {
            out.extend(args.next());
        }
    }
    out
}

/// Whether a flag reads the next word as its value: one that takes values and not only after `=`
/// (booleans, [`as_pflag_reads`]).
fn takes_a_word(arg: &clap::Arg) -> bool {
    arg.get_action().takes_values() && !arg.is_require_equals_set()
}
