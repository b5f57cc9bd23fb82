import Foundation
import VoxCore
import VoxDecode
import VoxTestSupport
