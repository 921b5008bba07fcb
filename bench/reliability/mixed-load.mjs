/**
 * The soak's mixed background load (bench/reliability/soak.mjs, profile-memory.mjs): a shell script for `sh -c`
 * that keeps starting short processes (/bin/true, 10 a second), writing and fsyncing 1 MiB to `DIR/load.data` every
 * second, and copying small blocks through dd, until it is killed.
 */
export const LOAD_SH = (dir) => `
set -u
f=${dir}/load.data
( while :; do for i in 1 2 3 4 5 6 7 8 9 10; do /bin/true; done; sleep 1; done ) &
( while :; do dd if=/dev/zero of="$f" bs=64k count=16 conv=fsync status=none; sleep 1; done ) &
( while :; do dd if=/dev/zero of=/dev/null bs=64 count=20000 status=none; sleep 0.2; done ) &
wait
`;
