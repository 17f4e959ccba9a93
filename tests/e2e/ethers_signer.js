// Used by tests/e2e/test_ethers_signer_e2e.py: sign a message with a node
// account through ethers 6's JsonRpcSigner (personal_sign), and send a
// transaction from an impersonated account (eth_sendTransaction); print
// what ethers saw, as JSON.
// Usage: node ethers_signer.js URL SIGNER IMPERSONATED RECIPIENT
const { JsonRpcProvider, verifyMessage } = require("ethers");

async function main() {
  const [url, signerAddress, impersonated, recipient] = process.argv.slice(2);
  const provider = new JsonRpcProvider(url, undefined, { staticNetwork: true, batchMaxCount: 1 });
  try {
    const signer = await provider.getSigner(signerAddress);
    const signature = await signer.signMessage("hello from ethers");
    const recovered = verifyMessage("hello from ethers", signature);
    const whale = await provider.getSigner(impersonated);
    const sent = await whale.sendTransaction({ to: recipient, value: 5n });
    const receipt = await sent.wait();
    console.log(JSON.stringify({ signature, recovered, from: receipt.from, status: receipt.status }));
  } finally {
    provider.destroy();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
