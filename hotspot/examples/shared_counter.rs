//! Many threads sharing one `Coordinator`: a stock count per product that may not go below
//! zero, decremented by concurrent buyers.
//!
//! The coordinator lives in an `Arc` and every thread calls [`Coordinator::execute`] on it;
//! requests for the same product are grouped, requests for different products run in
//! parallel. At the end the program checks that every successful purchase is counted exactly
//! once, and prints the `Group_update_*` counters.
//!
//! ```text
//! cargo run --release -p surge-hotspot --example shared_counter -- [--threads 32]
//!     [--products 4] [--stock 5000] [--buys 1000]
//! ```

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use surge_hotspot::{Applied, Config, Coordinator, GroupExecutor, Hints};

mod support {
    pub mod cli;
}

const USAGE: &str = "
Many threads sharing one hot-row Coordinator: buyers decrement per-product stock counts.

usage: shared_counter [--threads 32] [--products 4] [--stock 5000] [--buys 1000]

  --threads N   buyer threads, all sharing one Coordinator (default 32)
  --products N  products (keys); each thread buys them in turn (default 4)
  --stock N     initial stock of each product (default 5000)
  --buys N      purchases each thread attempts (default 1000)
  --help        this text
";

/// Stock counts in memory. A real executor would also log each group durably in `commit`
/// (see the `durable_counter` example).
struct Stock {
    counts: Mutex<HashMap<u32, i64>>,
}

impl GroupExecutor for Stock {
    type Key = u32;
    type Op = i64; // units to buy
    type Output = i64; // stock left after this purchase
    type Change = i64;
    type Reject = &'static str;
    type Error = Infallible;
    type Group = i64;

    fn begin(&self, product: &u32) -> Result<i64, Infallible> {
        let counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        Ok(counts.get(product).copied().unwrap_or(0))
    }

    fn apply(&self, stock: &i64, units: &i64) -> Result<Applied<i64, i64>, &'static str> {
        let left = stock - units;
        if left < 0 {
            return Err("sold out");
        }
        Ok(Applied::one_row(left, left))
    }

    fn accept(&self, stock: &mut i64, left: i64) {
        *stock = left;
    }

    fn commit(&self, product: &u32, stock: i64) -> Result<(), Infallible> {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        counts.insert(*product, stock);
        Ok(())
    }
}

struct Args {
    threads: u32,
    products: u32,
    stock: i64,
    buys: u32,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        threads: 32,
        products: 4,
        stock: 5000,
        buys: 1000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if !["--threads", "--products", "--stock", "--buys"].contains(&flag.as_str()) {
            return Err(format!("{flag} is not a flag of this example"));
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| -> Result<u64, String> {
            v.parse()
                .map_err(|_| format!("{flag} wants a whole number, not {v:?}"))
        };
        match flag.as_str() {
            "--threads" => a.threads = number(&value)? as u32,
            "--products" => a.products = number(&value)? as u32,
            "--stock" => a.stock = number(&value)? as i64,
            "--buys" => a.buys = number(&value)? as u32,
            other => return Err(format!("{other} is not a flag of this example")),
        }
    }
    if a.threads == 0 || a.products == 0 {
        return Err("--threads and --products must be at least 1".into());
    }
    Ok(a)
}

fn real_main() -> Result<(), String> {
    let args = parse_args()?;
    let counts = (0..args.products).map(|p| (p, args.stock)).collect();
    let stock = Stock {
        counts: Mutex::new(counts),
    };
    let hot = Arc::new(Coordinator::new(stock, Config::default()).map_err(|e| e.to_string())?);
    let hints = Hints::hot_update();
    let threads: Vec<_> = (0..args.threads)
        .map(|t| {
            let hot = Arc::clone(&hot);
            std::thread::spawn(move || {
                let mut bought = vec![0i64; args.products as usize];
                for i in 0..args.buys {
                    let product = (t + i) % args.products;
                    match hot.execute(&product, 1, hints) {
                        Ok(_left) => bought[product as usize] += 1,
                        Err(e) if e.is_member_failure() => {} // sold out: this buyer only
                        Err(e) => return Err(e.to_string()),
                    }
                }
                Ok(bought)
            })
        })
        .collect();
    let mut bought = vec![0i64; args.products as usize];
    for t in threads {
        let mine = t
            .join()
            .map_err(|_| "a buyer thread panicked".to_string())??;
        for (total, n) in bought.iter_mut().zip(mine) {
            *total += n;
        }
    }
    let counts = hot
        .executor()
        .counts
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    for p in 0..args.products {
        let left = counts[&p];
        let sold = bought[p as usize];
        println!("product {p}: {sold} sold, {left} left");
        if sold + left != args.stock {
            return Err(format!(
                "product {p}: {sold} sold + {left} left != {} stock",
                args.stock
            ));
        }
    }
    let s = hot.stats();
    println!(
        "{} requests in {} groups (mean {:.1} per group)",
        s.leader_count + s.follower_count,
        s.leader_count,
        s.mean_group_size()
    );
    for (name, value) in s.status_rows() {
        println!("{name:32} {value}");
    }
    // total_count counts group objects, which are pooled per key and reused for every group
    // on that key: it stays near the number of keys in flight, far below leader_count.
    Ok(())
}

fn main() -> std::process::ExitCode {
    support::cli::run(USAGE, real_main)
}
