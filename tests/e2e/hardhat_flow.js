// Used by tests/e2e/test_hardhat_e2e.py: a Hardhat 2 script (hardhat-ethers)
// run against a nodex node as an external network, the way a project's
// scripts and fixtures drive a node. Prints what it saw, as JSON.
// Environment: TOKEN_JSON, the compiled test token.
const hre = require("hardhat");

async function main() {
  const artifact = require(process.env.TOKEN_JSON);
  const [owner, other] = await hre.ethers.getSigners();
  const factory = new hre.ethers.ContractFactory(artifact.abi, artifact.bytecode, owner);
  const token = await factory.deploy("Token", "TOK", 10n ** 24n);
  await token.waitForDeployment();
  const receipt = await (await token.transfer(other.address, 1234n)).wait();
  // A fixture that impersonates a holder without its key.
  const whale = "0x7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a";
  await hre.network.provider.send("hardhat_impersonateAccount", [whale]);
  await hre.network.provider.send("hardhat_setBalance", [whale, "0xde0b6b3a7640000"]);
  await (await token.transfer(whale, 500n)).wait();
  const whaleSigner = await hre.ethers.getSigner(whale);
  const moved = await (await token.connect(whaleSigner).transfer(other.address, 100n)).wait();
  await hre.network.provider.send("hardhat_stopImpersonatingAccount", [whale]);
  // Moving time, then going back.
  const snapshot = await hre.network.provider.send("evm_snapshot", []);
  await hre.network.provider.send("hardhat_mine", ["0x100"]);
  const mined = await hre.ethers.provider.getBlockNumber();
  await hre.network.provider.send("evm_revert", [snapshot]);
  const reverted = await hre.ethers.provider.getBlockNumber();
  const signature = await owner.signMessage("hello");
  console.log(JSON.stringify({
    status: receipt.status,
    whaleFrom: moved.from.toLowerCase(),
    whaleStatus: moved.status,
    balance: (await token.balanceOf(other.address)).toString(),
    mined,
    reverted,
    signer: hre.ethers.verifyMessage("hello", signature) === owner.address,
  }));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
