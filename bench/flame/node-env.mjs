// The environment both flame benches run the tools in, and what NODE_EXTRA_CA_CERTS costs Node's start-up.
//
// When NODE_EXTRA_CA_CERTS is set (this sandbox sets it), every node process parses that PEM bundle while starting,
// before any of our code runs. The benches run `node dist/bundle/bpfscope.cjs ...` directly, so our runs pay it;
// the installed `bpfscope` command does not (its /bin/sh prelude unsets NODE_* variables, src/cli/launch.ts), and
// Perl never does. `--no-extra-ca-certs` runs both tools without it; the default keeps the environment as it is,
// so results stay comparable with earlier runs.

/** The environment for the timed runs: `process.env`, without NODE_EXTRA_CA_CERTS when `args` asks for it. */
export function benchEnv(args) {
  const env = { ...process.env };
  if (args.includes('--no-extra-ca-certs')) delete env.NODE_EXTRA_CA_CERTS;
  return env;
}

/**
 * One Markdown sentence: the median wall and CPU time of `node -e 0` (`rounds` runs each, alternated) with and
 * without NODE_EXTRA_CA_CERTS, and which of the two the timed runs used. `time(argv, env)` runs a command and returns
 * { wall, cpu } in seconds (the bench's /usr/bin/time wrapper).
 */
export function caCertsNote(env, rounds, time) {
  const file = process.env.NODE_EXTRA_CA_CERTS;
  const used = env.NODE_EXTRA_CA_CERTS ? 'with it' : 'without it (--no-extra-ca-certs)';
  if (!file) return 'NODE_EXTRA_CA_CERTS is not set.';
  const without = { ...process.env };
  delete without.NODE_EXTRA_CA_CERTS;
  const runs = { with: [], without: [] };
  for (let i = 0; i < rounds; i++) {
    runs.with.push(time([process.execPath, '-e', '0'], process.env));
    runs.without.push(time([process.execPath, '-e', '0'], without));
  }
  const med = (xs, k) => {
    const s = xs.map((x) => x[k]).sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  const f = (x) => x.toFixed(3);
  return (
    `Node start-up (\`node -e 0\`, medians of ${rounds} alternated runs): ${f(med(runs.with, 'wall'))} s wall / ` +
    `${f(med(runs.with, 'cpu'))} s CPU with NODE_EXTRA_CA_CERTS=${file}, ${f(med(runs.without, 'wall'))} s / ` +
    `${f(med(runs.without, 'cpu'))} s without it; our timed runs are ${used}.`
  );
}
