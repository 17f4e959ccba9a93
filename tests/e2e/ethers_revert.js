// Used by tests/e2e/test_revert_codes_e2e.py: make an eth_call that reverts
// through ethers 6 and print what ethers recovered, as JSON.
// Usage: node ethers_revert.js URL ADDRESS CALLDATA
const { JsonRpcProvider } = require("ethers");

async function main() {
  const [url, to, data] = process.argv.slice(2);
  const provider = new JsonRpcProvider(url, undefined, { staticNetwork: true, batchMaxCount: 1 });
  try {
    await provider.call({ to, data });
    console.log(JSON.stringify({ reverted: false }));
  } catch (error) {
    console.log(JSON.stringify({ reverted: true, code: error.code, reason: error.reason ?? null }));
  } finally {
    provider.destroy();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
